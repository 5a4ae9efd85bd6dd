"""A local OIDC identity provider for OAUTHBEARER clusters: an RSA key, its JWKS (a file the broker's
OAuthBearerValidatorCallbackHandler reads), and a client-credentials token endpoint on loopback.

Clients (the JVM's login handler and librdkafka's OIDC method alike) POST
``grant_type=client_credentials`` with HTTP basic authentication to ``/token`` and get an RS256 JWT
with ``sub``, ``iat``, ``exp``, ``aud`` and ``scope``. The key is made with the ``openssl`` command
and tokens are signed with it, so no cryptography package is needed. One wrong client secret gets
401, as a real provider answers.
"""
from __future__ import annotations

import base64
import hmac
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mirrorspark.errors import OperationalError
from mirrorspark.private_files import private_dir, write_private

AUDIENCE = "kafka"
SCOPE = "kafka"
KEY_ID = "mirrorspark-local"
TOKEN_SECONDS = 3600


class OidcError(OperationalError):
    """The local identity provider cannot be set up (no openssl, a port taken)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _openssl(*args: str, stdin: bytes | None = None) -> bytes:
    tool = shutil.which("openssl")
    if tool is None:
        raise OidcError("OAUTHBEARER clusters need the openssl command to make and use their signing key")
    done = subprocess.run([tool, *args], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise OidcError(f"openssl {args[0]} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def ensure_keys(folder: Path) -> Path:
    """``<folder>/oidc/``: ``key.pem`` (0600) and ``jwks.json``, made once; the folder is returned."""
    oidc = folder / "oidc"
    if (oidc / "jwks.json").is_file() and (oidc / "key.pem").is_file():
        return oidc
    private_dir(oidc)
    write_private(oidc / "key.pem", _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"))
    modulus = _openssl("rsa", "-in", str(oidc / "key.pem"), "-noout", "-modulus").decode().strip()
    n = bytes.fromhex(modulus.split("=", 1)[1])
    jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID, "n": _b64(n), "e": "AQAB"}]}
    (oidc / "jwks.json").write_text(json.dumps(jwks))
    return oidc


def jwks_url(folder: Path) -> str:
    return (folder / "oidc" / "jwks.json").resolve().as_uri()


def sign(folder: Path, subject: str, scope: str = SCOPE, seconds: int = TOKEN_SECONDS) -> str:
    """An RS256 JWT for ``subject`` signed with the cluster's key."""
    now = int(time.time())
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KEY_ID}).encode())
    claims = {"sub": subject, "iat": now, "exp": now + seconds, "aud": AUDIENCE, "scope": scope,
              "iss": "mirrorspark-local"}
    payload = _b64(json.dumps(claims).encode())
    signature = _openssl("dgst", "-sha256", "-sign", str(folder / "oidc" / "key.pem"),
                         stdin=f"{header}.{payload}".encode())
    return f"{header}.{payload}.{_b64(signature)}"


class TokenEndpoint:
    """``/token`` on 127.0.0.1: client credentials in, a signed JWT out. ``requests`` counts grants."""

    def __init__(self, *, folder: Path, client_id: str, client_secret: str, port: int = 0) -> None:
        ensure_keys(folder)
        self.folder, self.client_id, self.client_secret = folder, client_id, client_secret
        self.log = folder / "oidc" / "endpoint.log"  # one line per answer: "granted <id>" or "refused"
        self.requests = 0
        self.refused = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                who, secret = endpoint._credentials(self.headers.get("Authorization", ""), form)
                if self.path != "/token" or form.get("grant_type") != ["client_credentials"] \
                        or not hmac.compare_digest(f"{who}\0{secret}",
                                                   f"{endpoint.client_id}\0{endpoint.client_secret}"):
                    endpoint.refused += 1
                    endpoint._note("refused")
                    self._answer(401, {"error": "invalid_client"})
                    return
                endpoint.requests += 1
                endpoint._note(f"granted {who}")
                scope = (form.get("scope") or [SCOPE])[0]
                self._answer(200, {"access_token": sign(endpoint.folder, who, scope), "token_type": "Bearer",
                                   "expires_in": TOKEN_SECONDS, "scope": scope})

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:  # quiet: tests read their own output
                return

        try:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise OidcError(f"the token endpoint cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
        self.thread = threading.Thread(target=self.server.serve_forever, name="oidc-token-endpoint", daemon=True)

    @staticmethod
    def _credentials(authorization: str, form: dict[str, list[str]]) -> tuple[str, str]:
        if authorization.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(authorization[6:]).decode()
            except (ValueError, UnicodeDecodeError):
                return "", ""
            who, _, secret = decoded.partition(":")
            return urllib.parse.unquote(who), urllib.parse.unquote(secret)
        return (form.get("client_id") or [""])[0], (form.get("client_secret") or [""])[0]

    def _note(self, line: str) -> None:
        with self.log.open("a") as out:
            out.write(f"{line}\n")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def start(self) -> TokenEndpoint:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SERVE = "mirrorspark.local.oidc"  # ``python -m`` module: the detached endpoint of a local cluster


def main(argv: list[str]) -> None:
    """``python -m mirrorspark.local.oidc FOLDER PORT CLIENT_ID``: serve until SIGTERM. The client
    secret is read from the cluster folder's ``secrets.json`` (never from the command line)."""
    import signal
    import sys

    folder, port, client_id = Path(argv[0]), int(argv[1]), argv[2]
    secret = json.loads((folder / "secrets.json").read_text())["client_password"]
    endpoint = TokenEndpoint(folder=folder, client_id=client_id, client_secret=secret, port=port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    endpoint.server.serve_forever()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
