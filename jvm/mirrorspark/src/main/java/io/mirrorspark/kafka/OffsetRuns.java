package io.mirrorspark.kafka;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Where the writer's acknowledgements become offset runs ({@link OffsetRunList}), until the driver
 * drains them. Acknowledgements that continue a run on both sides extend it, so a contiguous
 * partition costs one run per batch however many records it carries. A run of count 0 marks a
 * failed write: the next run is not known to follow the previous one.
 *
 * Filled on the driver from the sink's commit messages (io.mirrorspark.sink), or in-process by the
 * interceptor; the state is a {@link JvmShared} map, so Spark's class loader and py4j's see the same runs.
 */
public final class OffsetRuns {

    private static final String STORE = "io.mirrorspark.kafka.OffsetRuns.store";
    private static final char SEP = '\u0000';

    private OffsetRuns() {
    }

    /** Per flow and target partition, its runs not drained yet, each list as its JDK form ({@link OffsetRunList#array}). */
    private static ConcurrentHashMap<String, long[]> store() {
        return JvmShared.map(STORE);
    }

    private static String key(String flow, String topic, int partition) {
        return flow + SEP + topic + SEP + partition;
    }

    /** One acknowledged record: source offset {@code upstream} landed at {@code downstream}. */
    public static void record(String flow, String topic, int partition, long upstream, long downstream) {
        store().compute(key(flow, topic, partition),
            (k, held) -> OffsetRunList.over(held).merge(upstream, downstream, 1).array());
    }

    /**
     * The runs of a task's commit messages, in source order: each extends the last run when it
     * continues it; a break is kept as one (the record it stood for is not said).
     */
    public static void add(String flow, String topic, int partition, OffsetRunList runs) {
        store().compute(key(flow, topic, partition), (k, held) -> {
            OffsetRunList list = OffsetRunList.over(held);
            for (int i = 0; i < runs.size(); i++) {
                if (runs.isBreak(i)) {
                    list.add(-1L, -1L, 0L);
                } else {
                    list.merge(runs.sourceStart(i), runs.targetStart(i), runs.count(i));
                }
            }
            return list.array();
        });
    }

    /** A write failed: whatever comes next for this partition does not continue the last run. */
    public static void broken(String flow, String topic, int partition) {
        store().compute(key(flow, topic, partition), (k, held) -> OffsetRunList.over(held).add(-1L, -1L, 0L).array());
    }

    /**
     * Take every run reported for {@code flow} so far, as lines
     * {@code topic TAB partition TAB upstream TAB downstream TAB count}.
     */
    public static String drain(String flow) {
        StringBuilder out = new StringBuilder();
        String prefix = flow + SEP;
        for (String key : store().keySet()) {
            if (!key.startsWith(prefix)) {
                continue;
            }
            long[] taken = store().remove(key);
            if (taken == null) {
                continue;  // drained meanwhile
            }
            int split = key.lastIndexOf(SEP);
            String topic = key.substring(prefix.length(), split);
            String partition = key.substring(split + 1);
            OffsetRunList runs = OffsetRunList.over(taken);
            for (int i = 0; i < runs.size(); i++) {
                out.append(topic).append('\t').append(partition).append('\t').append(runs.sourceStart(i)).append('\t')
                    .append(runs.targetStart(i)).append('\t').append(runs.count(i)).append('\n');
            }
        }
        return out.toString();
    }
}
