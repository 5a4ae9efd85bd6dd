package io.mirrorspark.sink;

import java.io.Serializable;

import io.mirrorspark.kafka.FlowStats;
import io.mirrorspark.kafka.OffsetRunList;

/**
 * The acknowledged records of one target partition in one task: offset runs ({@link OffsetRunList})
 * and MM2's per-partition figures ({@link FlowStats} layout). A record whose target offset is not
 * known (a row a re-run skips as committed whose pair the progress no longer holds, an
 * acknowledgement without an offset) is a break: the records around it are on the target, but where
 * is not known, so the runs on either side must not be taken for contiguous. Filled by the
 * producer's I/O thread, read by the task thread after {@code flush()}.
 */
final class PartitionAcks implements Serializable {
    private static final long serialVersionUID = 1L;

    final String topic;
    final int partition;
    private final OffsetRunList runs = new OffsetRunList();
    private final long[] stats = FlowStats.fresh();
    /** Rows found already on the target (paired, not sent) and target records written again. */
    long resumed;
    long recopied;
    /** Records sent with a schema id neither registry knows (copied unchanged, ADR 0028); task thread only. */
    long unresolvedSchemas;
    /** Real-time mode: the next target offset of this partition's interrupted run still to compare
     *  with the next batch's rows (every row so far matched; -1: the comparison is over here). */
    long resumeNext = -1L;
    /** The highest target offset acknowledged while the flow's write fence held (-1: none). */
    private long lastValid = -1L;
    private long ackedBytes;

    PartitionAcks(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
    }

    synchronized void ack(long upstream, long downstream, long bytes, long age, long latency) {
        FlowStats.add(stats, bytes, age, latency);
        ackedBytes += bytes;
        pair(upstream, downstream);
    }

    /** Key and value bytes acknowledged so far: how fast the target takes them now. */
    synchronized long ackedBytes() {
        return ackedBytes;
    }

    /** {@code downstream} was acknowledged while the flow's lease held. */
    synchronized void valid(long downstream) {
        lastValid = Math.max(lastValid, downstream);
    }

    synchronized long lastValid() {
        return lastValid;
    }

    /**
     * Pairs a source offset with the target offset holding it, without counting a write; a negative
     * {@code downstream} (not known) is a break, one for consecutive unknown records.
     */
    synchronized void pair(long upstream, long downstream) {
        runs.pair(upstream, downstream);
    }

    /** A copy of the runs so far; a break has count 0. */
    synchronized OffsetRunList runs() {
        return runs.copy();
    }

    synchronized long[] stats() {
        return stats.clone();
    }
}
