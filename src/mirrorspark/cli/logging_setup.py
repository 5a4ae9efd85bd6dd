"""Process logging: plain or JSON lines that name the flow, with the config's secrets scrubbed."""
from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable

from mirrorspark.config.redaction import Redactor, install

_FLOW = re.compile(r"^(?:flow|pair) (\S+?->\S+?)[: ]")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, flow (when the message names one), message."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        entry = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
                 "logger": record.name, "message": message}
        found = _FLOW.match(message)
        if found:
            entry["flow"] = found.group(1)
        if record.exc_info:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry)


class SecretScrubber(logging.Filter):
    """Hides any configured secret (and ``...password=VALUE`` fragments) that would reach a log line,
    through the same redactor as every other output (defence in depth)."""

    def __init__(self, redactor: Redactor | Iterable[str]) -> None:
        super().__init__()
        self.redactor = redactor if isinstance(redactor, Redactor) else Redactor(redactor)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = self.redactor.text(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            # A logged traceback ends with the exception's message, which may echo a value: format it
            # here (formatters reuse exc_text) so it passes the redactor too.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.text(record.exc_text)
        return True


def setup_logging(verbose: bool, json_lines: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler], force=True)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # A batch that fails raises through py4j's callback server, which logs it with the Python and Java
    # traceback; the supervisor reports each failure with its root cause (``--verbose`` keeps both).
    if not verbose:
        logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)


def scrub_secrets(secrets: Iterable[str]) -> Redactor:
    """Install a redactor knowing ``secrets`` for logs, CLI errors and every printed value."""
    redactor = install(Redactor(secrets))
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, SecretScrubber)]:
            handler.removeFilter(old)
        handler.addFilter(SecretScrubber(redactor))
    return redactor
