"""What the REST API needs from a running replicator, as a protocol so the app stays testable."""
from __future__ import annotations

from typing import Any, Protocol

from mirrorspark.errors import NotFound
from mirrorspark.partition import OffsetRun


class UnknownFlow(NotFound):
    """No flow of that name runs in this process."""


class Controller(Protocol):
    def flows(self) -> list[dict[str, Any]]: ...

    def flow(self, name: str) -> dict[str, Any]: ...

    def status(self) -> list[dict[str, Any]]:
        """What the status page shows: ``flows()`` plus per flow ``writing`` (this instance writes it),
        ``lag_topics`` (topic, records,
        seconds) and ``checkpoints`` (None: not known yet or a standby; else ``enabled``, ``emitted_at``,
        ``groups``, ``verdicts`` [{group, safe, reasons}], ``checked_at``, or ``error``). Never waits
        on a cluster: anything that needs one is computed in the background and served from memory."""
        ...

    def pause(self, name: str) -> dict[str, Any]: ...

    def resume(self, name: str) -> dict[str, Any]: ...

    def restart(self, name: str) -> dict[str, Any]: ...

    def copy_ends(self, name: str) -> list[dict[str, Any]]: ...

    def move_aside(self, name: str, moves: list[tuple[str, int, list[OffsetRun], int]]) -> list[dict[str, Any]]: ...

    def translate_positions(self, name: str, positions: list[tuple[str, int, int]]) -> list[dict[str, Any]]: ...

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]: ...

    def config(self) -> dict[str, Any]: ...
