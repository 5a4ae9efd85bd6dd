"""Headless Chromium for page tests: found on PATH, run offline (every non-loopback request goes to a
proxy on a dead port)."""
from __future__ import annotations

import shutil
import subprocess

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    """The first Chromium on PATH that runs (a snap stub in a container answers nothing)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found and subprocess.run([found, "--version"], capture_output=True, timeout=60).returncode == 0:
            return found
    return None


def chromium(binary: str, url: str, *extra: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Headless, and offline: every request that is not to loopback goes to a proxy on a dead port.
    Chromium never proxies loopback (its implicit bypass rule); ``--proxy-bypass-list=<-loopback>``
    would remove that rule and break the page itself."""
    command = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--proxy-server=127.0.0.1:9",
               # under the status page's 10 s meta refresh: a budget that reaches it may reload the page for ever
               "--virtual-time-budget=8000", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
