package io.mirrorspark.sink;

import java.io.Serializable;
import java.util.Arrays;

import io.mirrorspark.kafka.FlowStats;

/**
 * The acknowledged records of one target partition in one task: offset runs
 * {@code (upstream, downstream, count)} and MM2's per-partition figures ({@link FlowStats} layout).
 * Filled by the producer's I/O thread, read by the task thread after {@code flush()}.
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

    /** Pairs a source offset with the target offset holding it, without counting a write. */
    synchronized void pair(long upstream, long downstream) {
        if (downstream < 0) {
            return;
        }
        if (count > 0) {
            int last = (count - 1) * 3;
            long n = runs[last + 2];
            if (runs[last] + n == upstream && runs[last + 1] + n == downstream) {
                runs[last + 2] = n + 1;
                return;
            }
        }
        if ((count + 1) * 3 > runs.length) {
            runs = Arrays.copyOf(runs, runs.length * 2);
        }
        int at = count * 3;
        runs[at] = upstream;
        runs[at + 1] = downstream;
        runs[at + 2] = 1;
        count++;
    }

    /** The runs as {@code upstream, downstream, count} triples. */
    synchronized long[] runs() {
        return Arrays.copyOf(runs, count * 3);
    }

    synchronized long[] stats() {
        return stats.clone();
    }
}
