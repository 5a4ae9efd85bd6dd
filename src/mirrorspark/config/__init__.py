"""The MirrorMaker 2 configuration model: parse mm2.properties and resolve it with MM2's precedence."""
from mirrorspark.config.loader import load_config, parse_config
from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.errors import ConfigError

__all__ = ["ClusterConfig", "ConfigError", "FlowConfig", "MirrorConfig", "load_config", "parse_config"]
