"""The REST listener's key and certificate for uvicorn, from the keystore Kafka Connect's REST would take.

uvicorn (Python's ``ssl``) loads PEM only. A PEM keystore is used as it is; a PKCS12 one is turned into
PEM with ``openssl pkcs12`` (the password through the environment, never on a command line), a JKS one
first into PKCS12 with ``keytool`` (as the control plane converts client stores). The PEM goes into a
0700 folder under ``<state-dir>/private/`` and is removed when the server stops.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mirrorspark.errors import ConfigError

LOCATION = "mirrorspark.rest.ssl.keystore.location"


@dataclass(frozen=True)
class ServerKeys:
    """What uvicorn is given: ``certfile`` holds the chain (and the key when ``keyfile`` is None)."""

    certfile: Path
    keyfile_password: str | None
    folder: Path | None  # converted material to remove at stop


@dataclass(frozen=True)
class KeystoreSettings:
    location: str
    password: str | None
    store_type: str
    key_password: str | None

    def server_keys(self, private: Path) -> ServerKeys:
        path = Path(self.location)
        if not path.is_file():
            raise ConfigError(f"{LOCATION}={self.location} does not exist or is not a file", LOCATION)
        if self.store_type == "PEM":
            return ServerKeys(path, self.key_password, None)
        from mirrorspark.private_files import private_dir

        folder = private_dir(private_dir(private) / "rest-tls" / str(os.getpid()))
        store = path
        if self.store_type == "JKS":
            from mirrorspark.control.client_settings import jks_to_p12

            store = jks_to_p12(str(path), self.password, LOCATION, folder / "keystore.p12")
        out = folder / "server.pem"
        openssl = shutil.which("openssl")
        if openssl is None:
            raise ConfigError(f"{LOCATION}: turning a {self.store_type} keystore into the PEM the REST server loads "
                              "needs the openssl command; install it, or give a PEM keystore "
                              "(mirrorspark.rest.ssl.keystore.type = PEM)", LOCATION)
        env = {**os.environ, "MIRRORSPARK_REST_STORE_PASS": self.password or ""}
        done = subprocess.run([openssl, "pkcs12", "-in", str(store), "-out", str(out), "-nodes",
                               "-passin", "env:MIRRORSPARK_REST_STORE_PASS"],
                              capture_output=True, text=True, env=env, timeout=60)
        if done.returncode != 0 or not out.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            reason = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise ConfigError(f"{LOCATION}={self.location}: cannot open it as {self.store_type} with "
                              f"mirrorspark.rest.ssl.keystore.password ({reason})", LOCATION)
        out.chmod(0o600)
        return ServerKeys(out, None, folder)
