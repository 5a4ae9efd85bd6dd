"""Log lines: JSON naming the flow, and configured secrets never printed."""
from __future__ import annotations

import json
import logging

from mirrorspark.cli.logging_setup import JsonFormatter, SecretScrubber


def record(message: str, *args) -> logging.LogRecord:
    return logging.LogRecord("mirrorspark.x", logging.WARNING, __file__, 1, message, args, None)


def test_json_lines_name_the_flow():
    line = json.loads(JsonFormatter().format(record("flow %s: wrote %d checkpoint(s)", "A->B", 3)))
    assert line["flow"] == "A->B" and line["level"] == "WARNING"
    assert line["message"] == "flow A->B: wrote 3 checkpoint(s)"
    assert "flow" not in json.loads(JsonFormatter().format(record("no flow here")))


def test_secrets_scrubbed_from_messages_and_arguments():
    scrubber = SecretScrubber(["hunter22", "x"])  # too-short values are not scrubbed (they would mangle text)
    rec = record("login failed with %s for x", "hunter22")
    assert scrubber.filter(rec) and rec.getMessage() == "login failed with [hidden] for x"


def test_a_logged_traceback_is_scrubbed_too(caplog):
    import logging

    from mirrorspark.cli.logging_setup import JsonFormatter, SecretScrubber

    record = None
    try:
        raise ValueError("cannot open store with password hunter2-secret")
    except ValueError:
        import sys
        record = logging.LogRecord("t", logging.WARNING, __file__, 1, "task failed", None, sys.exc_info())
    SecretScrubber(["hunter2-secret"]).filter(record)
    plain = logging.Formatter("%(message)s").format(record)
    assert "Traceback" in plain and "ValueError" in plain and "hunter2-secret" not in plain
    assert "hunter2-secret" not in JsonFormatter().format(record)
