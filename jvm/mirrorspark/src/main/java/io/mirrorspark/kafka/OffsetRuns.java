package io.mirrorspark.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where the writer's acknowledgements become offset runs, until the driver drains them.
 *
 * A run {@code (upstream, downstream, count)} says that source offsets upstream..upstream+count-1
 * were written, in order, at target offsets downstream..downstream+count-1 of the same partition.
 * Acknowledgements that continue a run on both sides extend it, so a contiguous partition costs
 * one run per batch however many records it carries. A run of count 0 marks a failed write: the
 * next run is not known to follow the previous one.
 *
 * Filled on the driver from the sink's commit messages (io.mirrorspark.sink), or in-process by the
 * interceptor; the state is a {@link JvmShared} map, so Spark's class loader and py4j's see the same runs.
 */
public final class OffsetRuns {

    private static final String STORE = "io.mirrorspark.kafka.OffsetRuns.store";
    private static final char SEP = '\u0000';

    private OffsetRuns() {
    }

    private static Map<String, List<long[]>> store() {
        return JvmShared.map(STORE);
    }

    private static List<long[]> runs(String flow, String topic, int partition) {
        return store().computeIfAbsent(flow + SEP + topic + SEP + partition, k -> new ArrayList<>());
    }

    /** One acknowledged record: source offset {@code upstream} landed at {@code downstream}. */
    public static void record(String flow, String topic, int partition, long upstream, long downstream) {
        List<long[]> list = runs(flow, topic, partition);
        synchronized (list) {
            long[] last = list.isEmpty() ? null : list.get(list.size() - 1);
            if (last != null && last[2] > 0 && last[0] + last[2] == upstream && last[1] + last[2] == downstream) {
                last[2]++;
            } else {
                list.add(new long[] {upstream, downstream, 1});
            }
        }
    }

    /** A run reported whole (a task's commit message): extends the last run when it continues it. */
    public static void add(String flow, String topic, int partition, long upstream, long downstream, long count) {
        List<long[]> list = runs(flow, topic, partition);
        synchronized (list) {
            long[] last = list.isEmpty() ? null : list.get(list.size() - 1);
            if (last != null && last[2] > 0 && last[0] + last[2] == upstream && last[1] + last[2] == downstream) {
                last[2] += count;
            } else {
                list.add(new long[] {upstream, downstream, count});
            }
        }
    }

    /** A write failed: whatever comes next for this partition does not continue the last run. */
    public static void broken(String flow, String topic, int partition) {
        List<long[]> list = runs(flow, topic, partition);
        synchronized (list) {
            list.add(new long[] {-1, -1, 0});
        }
    }

    /**
     * Take every run reported for {@code flow} so far, as lines
     * {@code topic TAB partition TAB upstream TAB downstream TAB count}.
     */
    public static String drain(String flow) {
        StringBuilder out = new StringBuilder();
        String prefix = flow + SEP;
        for (Map.Entry<String, List<long[]>> entry : store().entrySet()) {
            String key = entry.getKey();
            if (!key.startsWith(prefix)) {
                continue;
            }
            int split = key.lastIndexOf(SEP);
            String topic = key.substring(prefix.length(), split);
            String partition = key.substring(split + 1);
            List<long[]> list = entry.getValue();
            synchronized (list) {
                for (long[] run : list) {
                    out.append(topic).append('\t').append(partition).append('\t').append(run[0]).append('\t')
                        .append(run[1]).append('\t').append(run[2]).append('\n');
                }
                list.clear();
            }
        }
        return out.toString();
    }
}
