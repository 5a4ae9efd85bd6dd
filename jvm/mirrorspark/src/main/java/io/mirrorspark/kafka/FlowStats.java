package io.mirrorspark.kafka;

import java.util.Map;

/**
 * Per target partition figures of acknowledged records, aggregated on the JVM side so that no
 * Python runs per record: count, bytes (key + value), record age when handed to the producer and
 * replication latency when acknowledged (both from the source timestamp), as min / max / sum.
 *
 * Filled on the driver from the sink's commit messages (io.mirrorspark.sink), or in-process by
 * the interceptor; like {@link OffsetRuns}, the state is a {@link JvmShared} map.
 */
public final class FlowStats {

    private static final String STORE = "io.mirrorspark.kafka.FlowStats.store";
    private static final char SEP = '\u0000';
    // count, bytes, age min, age max, age sum, latency min, latency max, latency sum, timed records,
    // then the record age histogram's bucket counts and the replication latency histogram's.
    private static final int SCALARS = 9;
    /**
     * Upper bounds (ms, inclusive) of the histograms' buckets, the last bucket being everything above:
     * from a same-rack copy (a few ms) to a flow catching up on minutes (ADR 0026). Python reads the
     * bounds from {@link #bucketBounds()}, so they are written here only.
     */
    private static final long[] BOUNDS_MS = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
        300000};
    private static final int BUCKETS = BOUNDS_MS.length + 1;
    private static final int AGE_BUCKETS = SCALARS;
    private static final int LATENCY_BUCKETS = SCALARS + BUCKETS;
    private static final int FIELDS = SCALARS + 2 * BUCKETS;

    private FlowStats() {
    }

    private static Map<String, long[]> store() {
        return JvmShared.map(STORE);
    }

    /** The histograms' bucket bounds in ms, comma separated (the last bucket, above them all, is implied). */
    public static String bucketBounds() {
        StringBuilder out = new StringBuilder();
        for (long bound : BOUNDS_MS) {
            out.append(out.length() == 0 ? "" : ",").append(bound);
        }
        return out.toString();
    }

    private static int bucket(long ms) {
        int i = 0;
        while (i < BOUNDS_MS.length && ms > BOUNDS_MS[i]) {
            i++;
        }
        return i;
    }

    /** Empty figures: count, bytes, age min/max/sum, latency min/max/sum, timed records, buckets. */
    public static long[] fresh() {
        long[] s = new long[FIELDS];
        s[2] = Long.MAX_VALUE;
        s[3] = Long.MIN_VALUE;
        s[5] = Long.MAX_VALUE;
        s[6] = Long.MIN_VALUE;
        return s;
    }

    /**
     * One acknowledged record of {@code bytes} bytes; {@code ageMs} and {@code latencyMs} are negative
     * when the record had no source timestamp.
     */
    public static void record(String flow, String topic, int partition, long bytes, long ageMs, long latencyMs) {
        long[] s = store().computeIfAbsent(flow + SEP + topic + SEP + partition, k -> fresh());
        synchronized (s) {
            add(s, bytes, ageMs, latencyMs);
        }
    }

    /** Count one record into figures {@code s} (the caller holds whatever lock guards them). */
    public static void add(long[] s, long bytes, long ageMs, long latencyMs) {
        s[0]++;
        s[1] += bytes;
        if (ageMs >= 0 && latencyMs >= 0) {
            s[2] = Math.min(s[2], ageMs);
            s[3] = Math.max(s[3], ageMs);
            s[4] += ageMs;
            s[5] = Math.min(s[5], latencyMs);
            s[6] = Math.max(s[6], latencyMs);
            s[7] += latencyMs;
            s[8]++;
            s[AGE_BUCKETS + bucket(ageMs)]++;
            s[LATENCY_BUCKETS + bucket(latencyMs)]++;
        }
    }

    /** Fold figures gathered elsewhere (a task's commit message) into the flow's. */
    public static void merge(String flow, String topic, int partition, long[] other) {
        if (other[0] == 0) {
            return;
        }
        long[] s = store().computeIfAbsent(flow + SEP + topic + SEP + partition, k -> fresh());
        synchronized (s) {
            s[0] += other[0];
            s[1] += other[1];
            s[2] = Math.min(s[2], other[2]);
            s[3] = Math.max(s[3], other[3]);
            s[4] += other[4];
            s[5] = Math.min(s[5], other[5]);
            s[6] = Math.max(s[6], other[6]);
            s[7] += other[7];
            s[8] += other[8];
            for (int i = SCALARS; i < FIELDS; i++) {
                s[i] += other[i];
            }
        }
    }

    /**
     * Take the figures gathered for {@code flow} since the last drain, as lines {@code topic TAB
     * partition TAB count TAB bytes TAB ageMin TAB ageMax TAB ageSum TAB latMin TAB latMax TAB latSum TAB timed},
     * then TAB and the age histogram's bucket counts, then the latency histogram's (not cumulative).
     */
    public static String drain(String flow) {
        StringBuilder out = new StringBuilder();
        String prefix = flow + SEP;
        for (Map.Entry<String, long[]> entry : store().entrySet()) {
            String key = entry.getKey();
            if (!key.startsWith(prefix)) {
                continue;
            }
            long[] s = entry.getValue();
            long[] taken;
            synchronized (s) {
                if (s[0] == 0) {
                    continue;
                }
                taken = s.clone();
                long[] reset = fresh();
                System.arraycopy(reset, 0, s, 0, FIELDS);
            }
            int split = key.lastIndexOf(SEP);
            out.append(key, prefix.length(), split).append('\t').append(key.substring(split + 1));
            for (long v : taken) {
                out.append('\t').append(v);
            }
            out.append('\n');
        }
        return out.toString();
    }
}
