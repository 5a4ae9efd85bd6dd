"""A two-cluster configuration that nothing contacts: the audit's pure parts take its flows as they are."""
from __future__ import annotations

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.properties_file import parse_properties

FLOW = "primary->backup"


@pytest.fixture
def mirror_config():
    """``mirror_config(extra)``: primary and backup (never reached), primary->backup enabled, plus ``extra`` lines."""
    def build(extra: str = "", enabled: bool = True) -> MirrorConfig:
        text = ("clusters = primary, backup\nprimary.bootstrap.servers = 127.0.0.1:1\n"
                f"backup.bootstrap.servers = 127.0.0.1:2\n{FLOW}.enabled = {str(enabled).lower()}\n{extra}")
        return parse_config(parse_properties(text))
    return build
