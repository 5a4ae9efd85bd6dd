"""``mirrorspark audit``: source against target, record by record, over a flow's exact offset ranges.

MM2 cannot say whether its copy is complete: it keeps only sparse offset syncs. mirrorspark's
range log knows which target offset holds each replicated source offset, so the check is exact:
a source record no target record maps to is *missing*, a target record no run maps to is a
*duplicate* (a copy written twice, or a record written behind the replicator's back), and a
mapped pair whose key, value, headers or timestamp differ is *differing*.

It runs as one Spark batch job so big topics are fine: both clusters are read over the replicated
ranges by Spark's Kafka source, every record is hashed on the JVM (``xxhash64``), target offsets
are mapped to source offsets by a broadcast join with the run table, and source and target meet
in one shuffle join by source offset. Only one row per partition comes back to Python.

A flow that runs active/active on the same names writes into topics that also hold the target's own
records, skips the source records that came from its target, and marks its copies with their path
(``mirrorspark.path``): the audit compares its copies only (records with a path), leaves out the
source records it skips, and hashes headers without the path.

One module per concern, so the parts that decide something are testable without a cluster or Spark:
``plan`` (the runs to compare), ``settings`` (the command's arguments and how each side is read),
``report`` (the findings), ``verdicts`` (what the counts mean for each consumer group), ``cluster``
(admin reads), ``job`` (the Spark job) and ``run`` (the command, in order). Nothing is imported here:
the CLI imports ``run`` when the command runs, so other commands never load it.
"""
