package io.mirrorspark.source;

import java.util.List;

import org.apache.spark.sql.connector.read.InputPartition;

/** One task of a batch: the ranges one consumer reads. No preferred executor (replication has no data locality). */
final class GroupPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final List<OffsetRange> ranges;
    /** Real-time mode: the ranges have no end; the task reads until the batch's deadline. */
    final boolean realTime;

    GroupPartition(List<OffsetRange> ranges, boolean realTime) {
        this.ranges = List.copyOf(ranges);
        this.realTime = realTime;
    }
}
