"""Serve the REST app with uvicorn in a daemon thread of the replicator process."""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from mirrorspark.config.errors import ConfigError

log = logging.getLogger(__name__)


def parse_listener(value: str, key: str = "mirrorspark.rest.listener") -> tuple[str, int]:
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{key} must be host:port (e.g. 127.0.0.1:8083), got {value!r}", key)
    return host.strip("[]"), int(port)


class RestServer:
    def __init__(self, app: FastAPI, host: str, port: int, state_dir: Path) -> None:
        self.config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                     lifespan="off")
        self.server = uvicorn.Server(self.config)
        self.state_file = state_dir / "rest.json"
        self.address: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 15.0) -> str:
        self._thread = threading.Thread(target=self.server.run, name="mirrorspark-rest", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the REST API could not listen on {self.config.host}:{self.config.port} "
                                  "(port in use?); change mirrorspark.rest.listener", "mirrorspark.rest.listener")
            time.sleep(0.05)
        sockets = [s for server in self.server.servers for s in server.sockets]
        host, port = sockets[0].getsockname()[:2]
        self.address = f"http://{host}:{port}"
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"url": self.address, "pid": os.getpid()}))
        os.replace(tmp, self.state_file)
        log.info("REST API and /metrics on %s", self.address)
        return self.address

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.state_file.unlink(missing_ok=True)
