package io.mirrorspark.source;

import java.util.List;

import org.apache.spark.sql.connector.read.InputPartition;

/** One task of a batch: the ranges one consumer reads. No preferred executor (replication has no data locality). */
final class GroupPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final List<OffsetRange> ranges;

    GroupPartition(List<OffsetRange> ranges) {
        this.ranges = List.copyOf(ranges);
    }
}
