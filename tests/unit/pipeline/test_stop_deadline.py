"""The stop deadline ends a real process with 143 and one line naming the step; a stop done in time
disarms it."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from mirrorspark.pipeline.stop_deadline import StopDeadline


def test_an_overrun_stop_exits_the_process_with_143_naming_the_step():
    script = textwrap.dedent("""
        import logging, time
        from mirrorspark.pipeline.stop_deadline import StopDeadline
        logging.basicConfig(level=logging.INFO)
        StopDeadline(seconds=0.5, step=lambda: "the offset syncs and lease group of flow a->b").arm()
        time.sleep(60)
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 143
    assert time.monotonic() - started < 20
    assert "did not finish within 0.5 s" in done.stderr
    assert "still stopping: the offset syncs and lease group of flow a->b" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_stop_done_in_time_never_exits():
    exits: list[int] = []
    deadline = StopDeadline(seconds=0.3, step=lambda: "x", exit_now=exits.append)
    deadline.arm()
    deadline.disarm()
    time.sleep(0.6)
    assert exits == []
