"""Serve the REST app with uvicorn in a daemon thread of the replicator process.

At start the server writes ``<state-dir>/rest.json`` (its address, for ``mirrorspark status``)
and, when no token is configured, a generated one in ``<state-dir>/rest.token`` (mode 0600 from
creation); both are removed on a clean stop.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from prometheus_client import CollectorRegistry

from mirrorspark.config.settings import SettingsReader
from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError
from mirrorspark.private_files import write_private
from mirrorspark.rest.controller import Controller
from mirrorspark.rest.history import History
from mirrorspark.rest.security import TOKEN_FILE, AllowedHosts, generate_token, is_loopback
from mirrorspark.rest.tls import KeystoreSettings

log = logging.getLogger(__name__)
STATE_FILE = "rest.json"


def parse_listener(value: str, key: str = "mirrorspark.rest.listener") -> tuple[str, int]:
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{key} must be host:port (e.g. 127.0.0.1:8083), got {value!r}", key)
    return host.strip("[]"), int(port)


LISTENER = "mirrorspark.rest.listener"


@dataclass(frozen=True)
class RestSettings:
    """The ``mirrorspark.rest.*`` settings, resolved once."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None        # configured; None with auth "token" means "generate one"
    auth: str = "token"             # "token" or "none"
    allowed_hosts: tuple[str, ...] = ()
    keystore: KeystoreSettings | None = None  # set: the listener is https

    @classmethod
    def from_config(cls, top: Mapping[str, str]) -> RestSettings:
        read = SettingsReader(top)  # defaults from the key declarations
        auth = read.text("mirrorspark.rest.auth").lower()
        if auth not in ("token", "none"):
            raise ConfigError(f"mirrorspark.rest.auth must be token or none, got {auth!r}", "mirrorspark.rest.auth")
        token = read.text("mirrorspark.rest.token") or None
        if token is not None and auth == "none":
            raise ConfigError("mirrorspark.rest.token is set but mirrorspark.rest.auth = none: remove one of them",
                              "mirrorspark.rest.auth")
        listener = read.text(LISTENER)
        scheme, sep, address = listener.strip().partition("://")
        scheme, address = (scheme.lower(), address) if sep else ("http", listener)
        if scheme not in ("http", "https"):
            raise ConfigError(f"{LISTENER} must be host:port, http://host:port or https://host:port, got "
                              f"{listener!r}", LISTENER)
        host, port = parse_listener(address)
        keystore = None
        location = read.text("mirrorspark.rest.ssl.keystore.location") or None
        if scheme == "https":
            if location is None:
                raise ConfigError(f"{LISTENER} = {listener} needs mirrorspark.rest.ssl.keystore.location (the "
                                  "listener's key and certificate)", "mirrorspark.rest.ssl.keystore.location")
            keystore = KeystoreSettings(location=location,
                                        password=read.raw("mirrorspark.rest.ssl.keystore.password") or None,
                                        store_type=read.choice("mirrorspark.rest.ssl.keystore.type"),
                                        key_password=read.raw("mirrorspark.rest.ssl.key.password") or None)
        elif location is not None:
            raise ConfigError(f"mirrorspark.rest.ssl.keystore.location is set but {LISTENER} = {listener} is plain "
                              f"HTTP: write it as https://{address}", LISTENER)
        elif not is_loopback(host) and not read.flag("mirrorspark.rest.plaintext.allowed"):
            raise ConfigError(f"{LISTENER} = {listener} serves the REST API (and its token) in plain HTTP beyond "
                              f"this machine: write it as https://{address} with mirrorspark.rest.ssl.keystore.*, or "
                              "set mirrorspark.rest.plaintext.allowed = true for a network you trust", LISTENER)
        extra = tuple(split_list(read.raw("mirrorspark.rest.allowed.hosts")))
        return cls(read.flag("mirrorspark.rest.enabled"), host, port, token, auth, extra, keystore)


class RestServer:
    def __init__(self, controller: Controller, registry: CollectorRegistry, settings: RestSettings,
                 state_dir: Path) -> None:
        from mirrorspark.rest.app import create_app

        self.settings = settings
        self.generated = settings.auth == "token" and settings.token is None
        self.token = generate_token() if self.generated else settings.token
        hosts = AllowedHosts.for_listener(settings.host, settings.allowed_hosts)
        self.history = History(flows=controller.flows)  # the status page's charts, sampled in a thread of its own
        app = create_app(controller, registry, self.token, hosts, history=self.history)
        self.keys = settings.keystore.server_keys(state_dir / "private") if settings.keystore is not None else None
        self.config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                                     access_log=False, lifespan="off",
                                     ssl_certfile=str(self.keys.certfile) if self.keys is not None else None,
                                     ssl_keyfile_password=self.keys.keyfile_password if self.keys is not None
                                     else None)
        self.server = uvicorn.Server(self.config)
        self.state_file = state_dir / STATE_FILE
        self.token_file = state_dir / TOKEN_FILE
        self.address: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 15.0) -> str:
        if self.settings.auth == "none" and not is_loopback(self.settings.host):
            log.warning("REST API on %s without authentication (mirrorspark.rest.auth = none): anyone who reaches "
                        "it can pause, resume and restart flows and read the configuration", self.settings.host)
        self._thread = threading.Thread(target=self.server.run, name="mirrorspark-rest", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the REST API could not listen on {self.config.host}:{self.config.port} "
                                  "(port in use?); change mirrorspark.rest.listener", "mirrorspark.rest.listener")
            time.sleep(0.05)
        self.history.start()
        sockets = [s for server in self.server.servers for s in server.sockets]
        host, port = sockets[0].getsockname()[:2]
        scheme = "http" if self.keys is None else "https"
        self.address = f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        if self.generated:
            assert self.token is not None
            write_private(self.token_file, self.token + "\n")  # before rest.json: whoever finds one finds both
        else:
            self.token_file.unlink(missing_ok=True)  # a previous run's token must not look current
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"url": self.address, "pid": os.getpid(), "auth": self.settings.auth,
                                   "token_file": TOKEN_FILE if self.generated else None}))
        os.replace(tmp, self.state_file)
        log.info("REST API and /metrics on %s (%s)", self.address,
                 f"token in {self.token_file}" if self.generated else
                 "token from mirrorspark.rest.token" if self.token else "no authentication")
        return self.address

    def stop(self) -> None:
        self.history.stop()
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.state_file.unlink(missing_ok=True)
        if self.generated:
            self.token_file.unlink(missing_ok=True)
        if self.keys is not None and self.keys.folder is not None:
            shutil.rmtree(self.keys.folder, ignore_errors=True)
