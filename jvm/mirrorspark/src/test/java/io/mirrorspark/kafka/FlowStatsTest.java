package io.mirrorspark.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The per-partition figures as Python reads them: scalars first, then two histograms whose buckets
 * count each timed record once, merged from tasks by adding bucket by bucket.
 */
final class FlowStatsTest {

    private static long[] fields(String line) {
        String[] parts = line.split("\t");
        long[] out = new long[parts.length - 2];
        for (int i = 2; i < parts.length; i++) {
            out[i - 2] = Long.parseLong(parts[i]);
        }
        return out;
    }

    @Test
    void bucketsCountEachTimedRecordOnceAndMergeAcrossTasks() {
        int bounds = FlowStats.bucketBounds().split(",").length;
        long[] task = FlowStats.fresh();
        FlowStats.add(task, 10, 3, 7);          // age 3 ms: first bucket; latency 7 ms: second
        FlowStats.add(task, 10, 5, 5);          // a bound is inclusive: both in the first bucket
        FlowStats.add(task, 10, 10_000_000, 400_000);  // above every bound: the last bucket
        FlowStats.add(task, 10, -1, -1);        // no source timestamp: counted, not timed
        long[] other = FlowStats.fresh();
        FlowStats.add(other, 4, 6, 6);
        FlowStats.merge("flowstats-test", "B.t", 0, task);
        FlowStats.merge("flowstats-test", "B.t", 0, other);
        String drained = FlowStats.drain("flowstats-test");
        assertTrue(drained.startsWith("B.t\t0\t"), drained);
        long[] f = fields(drained.trim());
        assertEquals(9 + 2 * (bounds + 1), f.length, "scalars then both histograms");
        assertEquals(5, f[0], "records");
        assertEquals(44, f[1], "bytes");
        assertEquals(4, f[8], "timed records");
        long[] age = java.util.Arrays.copyOfRange(f, 9, 9 + bounds + 1);
        long[] latency = java.util.Arrays.copyOfRange(f, 9 + bounds + 1, f.length);
        assertEquals(2, age[0]);
        assertEquals(1, age[1]);
        assertEquals(1, age[bounds]);
        assertEquals(1, latency[0]);
        assertEquals(2, latency[1]);
        assertEquals(1, latency[bounds]);
        assertEquals(4, java.util.Arrays.stream(age).sum(), "each timed record in one age bucket");
        assertEquals(4, java.util.Arrays.stream(latency).sum(), "each timed record in one latency bucket");
        assertEquals("", FlowStats.drain("flowstats-test"), "a drain takes the figures");
    }
}
