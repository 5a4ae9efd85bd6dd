"""How the command line reports failures: one clear line on stderr, a non-zero exit.

The error family (``mirrorspark.errors``) is mapped here once: ``ConfigError`` exits 2, any other
``MirrorsparkError`` 1. Kafka requests and files that fail say so in one line too. Anything else is
a bug: its traceback goes to the log and the user gets one line saying so."""
from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

import typer
from typer.exceptions import TyperException

from mirrorspark.errors import ConfigError, MirrorsparkError

EXIT_CONFIG = 2
EXIT_RUNTIME = 1

log = logging.getLogger(__name__)


class _Redacted(logging.Filter):
    """Every record of this logger, its traceback included, through the current redactor: commands
    other than ``run`` log through Python's default handler, without the scrubbing one."""

    def filter(self, record: logging.LogRecord) -> bool:
        from mirrorspark.cli.logging_setup import SecretScrubber
        from mirrorspark.config.redaction import current

        return SecretScrubber(current()).filter(record)


log.addFilter(_Redacted())


def fail(message: str, code: int) -> None:
    from mirrorspark.config.redaction import current

    # Messages may echo values: they go through the same redactor as every other output.
    typer.echo(f"mirrorspark: error: {current().text(message)}", err=True)
    raise typer.Exit(code)


def exit_code(exc: MirrorsparkError) -> int:
    """The exit code of an error of the family."""
    return EXIT_CONFIG if isinstance(exc, ConfigError) else EXIT_RUNTIME


def reported(func: Callable) -> Callable:
    """Turn failures into one clear line on stderr and a non-zero exit code."""
    from confluent_kafka import KafkaException

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except MirrorsparkError as exc:
            fail(str(exc), exit_code(exc))
        except KafkaException as exc:
            fail(f"Kafka request failed: {exc.args[0].str() if exc.args else exc}", EXIT_RUNTIME)
        except OSError as exc:  # a file or folder the command needs: say which, no traceback
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            fail(f"{exc.strerror or exc}{where}", EXIT_RUNTIME)
        except (typer.Exit, typer.Abort, TyperException):
            raise  # typer's own exits and usage errors (RuntimeError or Exception subclasses)
        except Exception as exc:  # a bug: the traceback is logged, the user gets one line
            log.exception("internal error in %s", func.__name__)
            fail(f"internal error: {exc} (traceback in the log)", EXIT_RUNTIME)

    return wrapper
