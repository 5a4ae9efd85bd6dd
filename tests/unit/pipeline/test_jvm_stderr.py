"""The Spark JVM's standard error reaches ours without the one line every start prints for nothing."""
from __future__ import annotations

import os

from mirrorspark.pipeline.spark_session import _forward_stderr


def test_the_incubator_module_line_is_dropped_and_everything_else_passes(capfd):
    read_end, write_end = os.pipe()
    os.write(write_end, b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                        b"Error: something the user must see\n:: resolving dependencies ::\n")
    os.close(write_end)
    _forward_stderr(read_end)
    err = capfd.readouterr().err
    assert "incubator" not in err
    assert "Error: something the user must see\n:: resolving dependencies ::\n" in err
