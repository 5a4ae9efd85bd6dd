"""The one family of errors mirrorspark raises on purpose.

Every expected failure derives from ``MirrorsparkError``, so the command line (``cli/reporting.py``)
and the REST API (``rest/app.py``) each map the family once, by these few classes, instead of
knowing every module's exception. Anything outside the family is a bug: reported as an internal
error, its traceback logged.

- ``ConfigError``: the input cannot be used (a setting, an argument); CLI exit 2, REST 400.
- ``OperationalError``: the input is fine but the work cannot be done (a cluster, Spark, the state
  folder, the setup...); CLI exit 1. Its ``NotFound`` (REST 404) and ``Conflict`` (REST 409: not
  now, in this state) tell the REST API what to answer.
"""
from __future__ import annotations


class MirrorsparkError(Exception):
    """Base of every error mirrorspark raises on purpose; its message is written for the user."""


class ConfigError(MirrorsparkError, ValueError):
    """The configuration cannot be used; ``key`` is the property at fault, if there is one."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class NeededAtRunTime(ConfigError):
    """The file is fine, but something it names is not on this machine (an environment variable, a
    file, a key store): ``validate --offline`` lists it as needed at run time instead of failing,
    as a CI machine has none of production's secrets."""


class ConfigErrors(ConfigError):
    """Several independent errors of one file, reported together (a file with four mistakes needs
    one run, not four)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        lines = "\n".join(f"  - {e}" for e in errors)
        super().__init__(f"{len(errors)} errors in the configuration:\n{lines}", errors[0].key)
        self.errors = errors


class OperationalError(MirrorsparkError):
    """The configuration is usable but the work cannot be done (cluster, state, Spark, setup...)."""


class ClusterFailure(OperationalError):
    """A cluster did not do what was asked (unreachable, a write not acknowledged): its message says all,
    a traceback would show only the client library's stack."""


class NotFound(OperationalError):
    """What was asked for does not exist (a flow, a topic)."""


class Conflict(OperationalError):
    """Refused in the current state of things (e.g. resuming a flow that is not paused)."""


def first_line(error: BaseException, limit: int = 300) -> str:
    """The first line of ``error``'s message for a one-line log or status; its class name when the
    message is empty (``TimeoutError()`` from a future says nothing else)."""
    text = str(error).strip()
    return text.splitlines()[0][:limit] if text else type(error).__name__
