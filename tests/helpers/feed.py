"""A steady stream of numbered records (header ``seq``) into a topic while a drill breaks something."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Producer

from helpers.records import numbered


class NumberedFeed:
    """``per_tick`` numbered records every 0.1 s (seq i into partition i % ``partitions``), idempotent so
    the source keeps their order, until stopped; ``sent`` is how many were produced."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_tick: int = 200) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
        self.topic, self.partitions, self.per_tick = topic, partitions, per_tick
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for record in numbered(self.sent, self.sent + self.per_tick, self.partitions):
                self.producer.produce(self.topic, **record)
            self.sent += self.per_tick
            self.producer.poll(0)
            time.sleep(0.1)
        assert self.producer.flush(30) == 0

    def __enter__(self) -> NumberedFeed:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> int:
        """Stop producing, wait for every record to be acknowledged; the count sent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(60)
        return self.sent
