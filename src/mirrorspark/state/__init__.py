"""Where a flow's durable state lives: a local folder or a Hadoop-compatible URI shared by machines."""
from mirrorspark.state.files import HadoopFiles, LocalFiles, StateFiles
from mirrorspark.state.location import StateLocation

__all__ = ["HadoopFiles", "LocalFiles", "StateFiles", "StateLocation"]
