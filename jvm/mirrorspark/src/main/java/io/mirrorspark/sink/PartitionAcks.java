package io.mirrorspark.sink;

import java.io.Serializable;
import java.util.Arrays;

import io.mirrorspark.kafka.FlowStats;

/**
 * The acknowledged records of one target partition in one task: offset runs
 * {@code (upstream, downstream, count)} and MM2's per-partition figures ({@link FlowStats} layout).
 * A record whose target offset is not known (a row a re-run skips as committed whose pair the
 * progress no longer holds, an acknowledgement without an offset) is a break {@code (upstream, -1, 0)}:
 * the records around it are on the target, but where is not known, so the runs on either side must
 * not be taken for contiguous. Filled by the producer's I/O thread, read by the task thread after
 * {@code flush()}.
 */
final class PartitionAcks implements Serializable {
    private static final long serialVersionUID = 1L;

    final String topic;
    final int partition;
    private long[] runs = new long[3 * 4];
    private int count;
    private final long[] stats = FlowStats.fresh();
    /** Rows found already on the target (paired, not sent) and target records written again. */
    long resumed;
    long recopied;
    /** Real-time mode: the next target offset of this partition's interrupted run still to compare
     *  with the next batch's rows (every row so far matched; -1: the comparison is over here). */
    long resumeNext = -1L;
    /** The highest target offset acknowledged while the flow's write fence held (-1: none). */
    private long lastValid = -1L;

    PartitionAcks(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
    }

    synchronized void ack(long upstream, long downstream, long bytes, long age, long latency) {
        FlowStats.add(stats, bytes, age, latency);
        pair(upstream, downstream);
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
        if (count > 0) {
            int last = (count - 1) * 3;
            long n = runs[last + 2];
            if (downstream < 0 && n == 0) {
                return;  // the break already there covers this record too
            }
            if (n > 0 && downstream >= 0 && runs[last] + n == upstream && runs[last + 1] + n == downstream) {
                runs[last + 2] = n + 1;
                return;
            }
        }
        if ((count + 1) * 3 > runs.length) {
            runs = Arrays.copyOf(runs, runs.length * 2);
        }
        int at = count * 3;
        runs[at] = upstream;
        runs[at + 1] = downstream < 0 ? -1L : downstream;
        runs[at + 2] = downstream < 0 ? 0L : 1L;
        count++;
    }

    /** The runs as {@code upstream, downstream, count} triples; a break has count 0. */
    synchronized long[] runs() {
        return Arrays.copyOf(runs, count * 3);
    }

    synchronized long[] stats() {
        return stats.clone();
    }
}
