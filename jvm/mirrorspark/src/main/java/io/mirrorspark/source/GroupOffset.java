package io.mirrorspark.source;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/**
 * Where one real-time task stopped: the next offset to read of each partition of its group, and
 * the partitions it gave up this batch (their end went behind its position: a re-created topic).
 * Spark hands these to {@link GroupedMicroBatchStream#mergeOffsets} once per task, at the batch's end.
 */
final class GroupOffset implements PartitionOffset {
    private static final long serialVersionUID = 1L;

    final HashMap<TopicPartition, Long> next;
    final HashSet<TopicPartition> dropped;

    GroupOffset(Map<TopicPartition, Long> next, Set<TopicPartition> dropped) {
        this.next = new HashMap<>(next);
        this.dropped = new HashSet<>(dropped);
    }

    @Override
    public String toString() {
        return "GroupOffset" + next + (dropped.isEmpty() ? "" : " dropped " + dropped);
    }
}
