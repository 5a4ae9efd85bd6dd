"""``mirrorspark.trigger = auto``: real-time mode where the process can hold it, micro-batches elsewhere.

Real-time mode forwards each record as it arrives (MM2's latency) but holds a task slot per task for
as long as a flow runs; micro-batches share the slots. ``auto`` decides once, when the file is read,
from what the file says: a flow bounding its batches by records keeps micro-batches; on ``local[N]``
the flows run in real-time mode when every real-time flow gets its tasks' slots beside one slot per
micro-batch flow, else the ``auto`` flows run micro-batches. On a Spark cluster the executor cores
are not known before the executors register, and they come and go: ``auto`` keeps micro-batches
there (``realtime`` asks for it). The choice and its reason are logged at start.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mirrorspark.config.model import FlowConfig

DEFAULT_MASTER = "local[*]"  # Spark's master when mm2.properties sets none
KEY = "mirrorspark.trigger"
AUTO, REALTIME, MICROBATCH = "auto", "realtime", "microbatch"

_LOCAL = re.compile(r"\s*local(?:\[(\*|\d+)(?:,\s*\d+)?\])?\s*")  # spark.master in one JVM: local[N] threads


def local_slots(master: str, task_cpus: int) -> int | None:
    """Task slots of a ``local`` master (threads over ``spark.task.cpus``); None for a cluster master."""
    found = _LOCAL.fullmatch(master)
    if not found:
        return None
    threads = found.group(1) or "1"
    count = (os.cpu_count() or 1) if threads == "*" else int(threads)
    return max(1, count // max(1, task_cpus))


def choose(flows: Sequence[FlowConfig], spark: Mapping[str, str]) -> list[FlowConfig]:
    """``flows`` with each ``auto`` flow's choice made (``FlowConfig.auto_choice``); the others unchanged.
    ``flows``: the enabled flows this process runs; ``spark``: the file's ``spark.*`` keys."""
    auto = [f for f in flows if f.options.trigger == AUTO]
    if not auto:
        return list(flows)
    master = spark.get("spark.master", DEFAULT_MASTER)
    slots = local_slots(master, int(spark.get("spark.task.cpus", "1") or "1"))
    bounded = {f.name for f in auto if f.options.batch_max_records > 0}
    candidates = [f for f in auto if f.name not in bounded]
    explicit_rt = [f for f in flows if f.options.trigger == REALTIME]
    microbatch = len(flows) - len(explicit_rt) - len(candidates)
    needed = sum(max(1, f.options.realtime_tasks) for f in [*explicit_rt, *candidates])
    choices: dict[str, tuple[str, str]] = {
        f.name: (MICROBATCH, f"{f.where('mirrorspark.batch.max.records')} = {f.options.batch_max_records} bounds "
                             "micro-batches") for f in auto if f.name in bounded}
    for flow in candidates:
        if slots is None:
            choices[flow.name] = (MICROBATCH, f"spark.master = {master.strip()} is a cluster: its executor cores "
                                              f"are known only once they register (set {KEY} = realtime for it)")
        elif needed + microbatch <= slots:
            choices[flow.name] = (REALTIME, f"spark.master = {master.strip()} has {slots} task slot(s): "
                                            f"{needed} for real-time tasks, {microbatch} for micro-batch flows")
        else:
            choices[flow.name] = (MICROBATCH, f"spark.master = {master.strip()} has {slots} task slot(s), fewer "
                                              f"than the {needed} real-time tasks and {microbatch} micro-batch "
                                              f"flow(s) would need")
    return [dataclasses.replace(f, auto_choice=choices[f.name]) if f.name in choices else f for f in flows]
