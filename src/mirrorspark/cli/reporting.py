"""How the command line reports expected failures: one clear line on stderr, a non-zero exit."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

import typer

from mirrorspark.config.errors import ConfigError

EXIT_CONFIG = 2
EXIT_RUNTIME = 1


def fail(message: str, code: int) -> None:
    from mirrorspark.config.redaction import current

    # Messages may echo values: they go through the same redactor as every other output.
    typer.echo(f"mirrorspark: error: {current().text(message)}", err=True)
    raise typer.Exit(code)


def reported(func: Callable) -> Callable:
    """Turn expected failures into one clear line on stderr and a non-zero exit code."""
    from mirrorspark.control.remote_topics import RemoteTopicsError
    from mirrorspark.local import LocalClusterError
    from mirrorspark.paths import SetupMissing
    from mirrorspark.pipeline.executors import ExecutorSetupError
    from mirrorspark.pipeline.runner import ClusterUnreachable
    from mirrorspark.pipeline.spark_session import SparkUnavailable
    from mirrorspark.state.files import StateError
    from mirrorspark.takeover.mm2_state import TakeoverRefused
    from confluent_kafka import KafkaException

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ConfigError as exc:
            fail(str(exc), EXIT_CONFIG)
        except (ClusterUnreachable, LocalClusterError, SetupMissing, RemoteTopicsError, SparkUnavailable,
                ExecutorSetupError, StateError, TakeoverRefused) as exc:
            fail(str(exc), EXIT_RUNTIME)
        except KafkaException as exc:
            fail(f"Kafka request failed: {exc.args[0].str() if exc.args else exc}", EXIT_RUNTIME)
        except OSError as exc:  # a file or folder the command needs: say which, no traceback
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            fail(f"{exc.strerror or exc}{where}", EXIT_RUNTIME)

    return wrapper
