"""A state location under a Hadoop URI, without a JVM: what the driver JVM throws is told to the user
as a state error naming the file, or at start as a configuration error naming the key."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JJavaError

from mirrorspark.errors import ConfigError
from mirrorspark.jvm_bridge import JvmError
from mirrorspark.state.files import HadoopFiles, StateError
from mirrorspark.state.location import StateLocation


class Refusing:
    """The bridge's state files of a bucket that refuses writes."""

    def write(self, uri: str, text: str) -> None:
        raise JvmError(call="StateFiles.write", kind="AccessDeniedException", detail=f"{uri}: 403 Forbidden",
                       text="")

    def read(self, uri: str) -> str | None:
        return None


def test_a_refused_write_names_the_file_and_the_java_exception():
    folder = HadoopFiles("s3a://bucket/flows/", jvm=Refusing()).child("a").child("b")  # type: ignore[arg-type]
    assert folder.read("write-marks.json") is None
    with pytest.raises(StateError, match=re.escape("state location: cannot write s3a://bucket/flows/a/b/marks.json: "
                                                   "AccessDeniedException: s3a://bucket/flows/a/b/marks.json: 403")):
        folder.write("marks.json", "{}")


class Throwable:
    _target_id = "o3"

    def getClass(self):
        return SimpleNamespace(getSimpleName=lambda: "UnsupportedFileSystemException")

    def getMessage(self):
        return 'No FileSystem for scheme "s4"'

    def toString(self):
        return 'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s4"'


def test_a_scheme_without_a_hadoop_file_system_is_a_configuration_error(tmp_path: Path):
    def probe(uri, conf):
        raise Py4JJavaError("An error occurred while calling z:io.mirrorspark.state.StateFiles.probe.\n", Throwable())

    state = SimpleNamespace(StateFiles=SimpleNamespace(probe=probe))
    spark = SimpleNamespace(_jvm=SimpleNamespace(io=SimpleNamespace(mirrorspark=SimpleNamespace(state=state))),
                            _jsc=None, _jsparkSession=SimpleNamespace(
                                sessionState=lambda: SimpleNamespace(newHadoopConf=lambda: "conf")))
    with pytest.raises(ConfigError, match="no Hadoop file system for this scheme") as caught:
        StateLocation.parse("s4://bucket/flows", tmp_path).open(spark)
    assert caught.value.key == "mirrorspark.state.location"
