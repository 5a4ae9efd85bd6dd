package io.mirrorspark.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;

import org.junit.jupiter.api.Test;

/**
 * The offset-run type alone: pairs that continue the last run on both sides extend it, anything else
 * starts a run, unknown target offsets make one break, and the driver's store drains the runs as the
 * text Python parses.
 */
final class OffsetRunListTest {

    @Test
    void pairsThatContinueOnBothSidesExtendTheLastRun() {
        OffsetRunList runs = new OffsetRunList();
        for (long upstream = 10; upstream < 15; upstream++) {
            runs.pair(upstream, upstream + 90);
        }
        runs.pair(16, 105);  // the source skipped 15 (a transaction marker): a new run
        runs.pair(17, 107);  // the target skipped 106: a new run
        assertEquals(3, runs.size());
        assertEquals(10, runs.sourceStart(0), "named accessors");
        assertEquals(100, runs.targetStart(0), "named accessors");
        assertEquals(5, runs.count(0), "named accessors");
        assertEquals(OffsetRunList.of(10, 100, 5, 16, 105, 1, 17, 107, 1), runs);
        assertEquals("[10:100:5, 16:105:1, 17:107:1]", runs.toString());
        assertEquals(104, runs.targetOf(14), "a source offset maps inside its run");
        assertEquals(-1, runs.targetOf(15), "a skipped source offset has no target");
    }

    @Test
    void unknownTargetOffsetsMakeOneBreak() {
        OffsetRunList runs = new OffsetRunList().pair(0, 50).pair(1, -1).pair(2, -1).pair(3, 53).pair(4, 54);
        assertEquals(OffsetRunList.of(0, 50, 1, 1, -1, 0, 3, 53, 2), runs, "consecutive unknowns: one break");
        assertTrue(runs.isBreak(1));
        assertEquals(-1, runs.targetOf(1), "a break maps nothing");
        assertEquals(OffsetRunList.of(0, 50, 1, 3, 53, 2), runs.withoutBreaks());
        assertEquals(OffsetRunList.of(0, 50, 1, 3, 53, 2, 5, 55, 0),
            runs.withoutBreaks().merge(5, 55, 0), "a break is added even where a run would continue");
        assertEquals(OffsetRunList.of(0, 50, 1, 1, -1, 0, 2, 52, 1),
            new OffsetRunList().pair(0, 50).pair(1, -1).pair(2, 52), "a run after a break starts anew");
    }

    @Test
    void runsOfTheSamePartitionFromSeveralTasksComeBackInSourceOrder() {
        OffsetRunList all = new OffsetRunList()
            .addAll(OffsetRunList.of(20, 120, 5, 25, -1, 0))
            .addAll(OffsetRunList.of(0, 100, 10, 10, 110, 10));
        assertEquals(OffsetRunList.of(0, 100, 10, 10, 110, 10, 20, 120, 5, 25, -1, 0), all.sortedBySource(),
            "sorted, runs kept as they are");
        assertEquals(OffsetRunList.of(20, 120, 5, 25, -1, 0, 0, 100, 10, 10, 110, 10), all, "the list itself unchanged");
    }

    @Test
    void aCopyAndASerializedListHoldTheSameRuns() throws IOException, ClassNotFoundException {
        OffsetRunList runs = new OffsetRunList();
        for (int i = 0; i < 100; i++) {
            runs.pair(2L * i, 3L * i);  // 100 runs: grown well past the first array
        }
        OffsetRunList copy = runs.copy();
        runs.pair(1_000, 1_000);
        assertEquals(100, copy.size(), "a copy is not changed by its original");
        assertNotEquals(runs, copy);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(copy);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            OffsetRunList read = (OffsetRunList) in.readObject();
            assertEquals(copy, read, "as a task's commit message carries it to the driver");
            assertEquals(copy.hashCode(), read.hashCode());
        }
        assertThrows(IndexOutOfBoundsException.class, () -> copy.count(100), "no run past the end");
        assertThrows(IllegalArgumentException.class, () -> OffsetRunList.of(1, 2), "triples only");
    }

    @Test
    void theDriversStoreMergesAcrossReportsAndDrainsTheText() {
        OffsetRuns.add("runs-a", "t", 0, OffsetRunList.of(0, 100, 10));
        OffsetRuns.add("runs-a", "t", 0, OffsetRunList.of(10, 110, 5, 15, -1, 0));  // continues, then a break
        OffsetRuns.record("runs-a", "t", 0, 20, 130);
        OffsetRuns.record("runs-a", "t", 0, 21, 131);
        OffsetRuns.broken("runs-a", "t", 0);
        OffsetRuns.record("runs-b", "t", 0, 0, 0);
        assertEquals("t\t0\t0\t100\t15\nt\t0\t-1\t-1\t0\nt\t0\t20\t130\t2\nt\t0\t-1\t-1\t0\n", OffsetRuns.drain("runs-a"),
            "merged where runs continue; a break as -1 -1 0");
        assertEquals("", OffsetRuns.drain("runs-a"), "drained once");
        assertEquals("t\t0\t0\t0\t1\n", OffsetRuns.drain("runs-b"), "another flow's runs are its own");
    }
}
