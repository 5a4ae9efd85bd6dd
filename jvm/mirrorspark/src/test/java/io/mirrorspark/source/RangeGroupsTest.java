package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** The source's grouping of partitions into tasks, without brokers or Spark. */
final class RangeGroupsTest {

    @Test
    void groupsAreBalancedByRecords() {
        List<OffsetRange> ranges = new ArrayList<>();
        ranges.add(new OffsetRange("busy", 0, 0, 1000));
        ranges.add(new OffsetRange("busy", 1, 0, 900));
        for (int p = 0; p < 20; p++) {
            ranges.add(new OffsetRange("quiet", p, 5, 10));
        }
        List<List<OffsetRange>> groups = RangeGroups.split(ranges, 2);
        assertEquals(2, groups.size(), "two groups");
        long a = groups.get(0).stream().mapToLong(OffsetRange::size).sum();
        long b = groups.get(1).stream().mapToLong(OffsetRange::size).sum();
        assertEquals(2000, a + b, "every record planned once");
        assertTrue(Math.abs(a - b) <= 100, "balanced by records: " + a + " vs " + b);
        assertNotEquals(groups.get(0).get(0).partition, groups.get(1).get(0).partition, "the two busy partitions apart");
    }

    @Test
    void everyPartitionInExactlyOneGroup() {
        List<OffsetRange> ranges = new ArrayList<>();
        for (int p = 0; p < 3000; p++) {
            ranges.add(new OffsetRange("t" + (p / 10), p % 10, 0, 20));
        }
        ranges.add(new OffsetRange("empty", 0, 7, 7));
        List<List<OffsetRange>> groups = RangeGroups.split(ranges, 4);
        assertEquals(4, groups.size(), "3,000 partitions in 4 tasks");
        Set<String> seen = new HashSet<>();
        for (List<OffsetRange> g : groups) {
            assertEquals(750, g.size(), "750 partitions per task");
            for (OffsetRange r : g) {
                assertTrue(seen.add(r.topic + "-" + r.partition), () -> "planned twice: " + r);
            }
        }
        assertEquals(3000, seen.size(), "every partition with records");
        assertFalse(seen.contains("empty-0"), "no empty range");
    }

    @Test
    void fewerRangesThanGroups() {
        assertEquals(1, RangeGroups.split(List.of(new OffsetRange("t", 0, 0, 1)), 8).size(), "one range, one task");
        assertTrue(RangeGroups.split(List.of(), 8).isEmpty(), "nothing to read, no task");
    }
}
