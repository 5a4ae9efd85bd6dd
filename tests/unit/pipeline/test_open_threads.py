"""The control plane opens in a thread while the launching thread starts Spark; both import py4j."""

import subprocess
import sys
import textwrap


def test_py4j_and_pyspark_are_imported_before_the_opening_thread_starts():
    # Two threads importing py4j at once stop on a _DeadlockError (py4j's modules import each other);
    # seen once in the suite as "internal error: deadlock detected by _ModuleLock('py4j.java_collections')".
    # A fresh interpreter, so that nothing imported them before.
    script = textwrap.dedent("""
        import sys, types
        from mirrorspark.pipeline.runner import Replicator
        assert "py4j.java_gateway" not in sys.modules
        seen = {}
        fake = types.SimpleNamespace(
            _open=lambda: seen.update(modules={m for m in ("py4j.java_gateway", "pyspark.sql", "pyspark.errors")
                                               if m in sys.modules}),
            _start_spark=lambda: None)
        Replicator._open_while_spark_starts(fake)
        print(sorted(seen["modules"]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['py4j.java_gateway', 'pyspark.errors', 'pyspark.sql']"
