package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Exactly-once with one producer per task: a partition's progress kept by a JVM is used without a
 * read only where nothing else can have committed the partition since (ADR 0029).
 */
final class KnownProgressTest {
    private static final Transactions.Known AT_7 = new Transactions.Known(Progress.NONE, "run-a", 7L);

    @Test
    void inLocalModeEveryBatchOfTheSameStartUsesIt() {
        assertTrue(Transactions.usable(AT_7, "run-a", 8L, true), "the next batch");
        assertTrue(Transactions.usable(AT_7, "run-a", 70L, true), "a quiet partition, many batches later: only this JVM writes");
    }

    @Test
    void onAClusterOnlyTheSameOrTheNextBatchUsesIt() {
        assertTrue(Transactions.usable(AT_7, "run-a", 7L, false), "a later transaction of the same batch");
        assertTrue(Transactions.usable(AT_7, "run-a", 8L, false), "the next batch: no other task wrote it in between");
        assertFalse(Transactions.usable(AT_7, "run-a", 9L, false), "a batch between may have given it to another executor");
    }

    @Test
    void anotherStartOrNoneKnownReadsTheTarget() {
        assertFalse(Transactions.usable(AT_7, "run-b", 8L, true), "another start: another instance may have written since");
        assertFalse(Transactions.usable(AT_7, null, 8L, true), "a writer not told its start");
        assertFalse(Transactions.usable(null, "run-a", 8L, true), "nothing kept");
    }
}
