"""A client of a running mirrorspark's REST API, for the commands that ask it (``status``, ``promote``...)."""
from __future__ import annotations

import contextlib
import json
import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mirrorspark.errors import OperationalError


class RestUnanswered(OperationalError):
    """The REST API did not answer, or answered with an error."""


def read_json(url: str, token: str | None, cacert: Path | None = None, *, post: bool = False,
              body: Any = None) -> Any:
    """GET (or POST, with ``body`` as JSON or empty) ``url``; an https server's certificate is checked
    against ``cacert`` (or ``$MIRRORSPARK_REST_CACERT``), else the system's CAs. Raises RestUnanswered."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        post, data = True, json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    elif post:
        data = b""
    request = urllib.request.Request(url, headers=headers, data=data, method="POST" if post else "GET")
    context = None
    if url.startswith("https://"):
        cafile = cacert or (Path(os.environ["MIRRORSPARK_REST_CACERT"]) if os.environ.get("MIRRORSPARK_REST_CACERT")
                            else None)
        try:
            context = ssl.create_default_context(cafile=str(cafile) if cafile is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise RestUnanswered(f"--cacert {cafile}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        with urllib.request.urlopen(request, timeout=15, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        with contextlib.suppress(ValueError):
            detail = json.loads(detail).get("detail", detail)
        raise RestUnanswered(f"{url} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise RestUnanswered(f"cannot reach {url}: {getattr(exc, 'reason', exc)}; is mirrorspark running?") from None
