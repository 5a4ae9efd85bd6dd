package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.junit.jupiter.api.Test;

/**
 * A real-time replay spread over several batches: each batch's writers compare from where the ones
 * before them stopped, and a partition whose comparison ended is not compared again.
 */
final class ResumeLedgerTest {
    private static final String A = WriteSettings.key("t", 0);
    private static final String B = WriteSettings.key("t", 1);

    /** Only a batch with a retried task attempt asks the target. */
    private static final ResumeLedger.TargetEnds NOT_ASKED = keys -> {
        throw new AssertionError("the target's ends were asked without a retried attempt");
    };

    private static ResumeLedger ledger() {
        return new ResumeLedger("run-1", Map.of(A, new long[] {100, 140}, B, new long[] {200, 220}));
    }

    private static WriterCommitMessage[] batch(PartitionAcks... parts) {
        return new WriterCommitMessage[] {new TaskReport("1", List.of(parts))};
    }

    private static PartitionAcks acks(int partition, long resumeNext) {
        PartitionAcks acks = new PartitionAcks("t", partition);
        acks.resumeNext = resumeNext;
        return acks;
    }

    @Test
    void aPartitionStillMatchingCarriesOnFromItsNextOffset() {
        ResumeLedger ledger = ledger();
        ledger.advance(batch(acks(0, 103)), NOT_ASKED);
        HashMap<String, long[]> left = ledger.left();
        assertArrayEquals(new long[] {103, 140}, left.get(A));
        assertArrayEquals(new long[] {200, 220}, left.get(B), "no rows of partition 1 in that batch: untouched");
    }

    @Test
    void aComparisonThatEndedIsNotTakenUpAgain() {
        ResumeLedger ledger = ledger();
        ledger.advance(batch(acks(0, -1), acks(1, 210)), NOT_ASKED);
        ledger.advance(batch(acks(1, -1)), NOT_ASKED);
        assertTrue(ledger.left().isEmpty());
    }

    @Test
    void aNextOffsetOutsideTheRangeEndsIt() {
        ResumeLedger ledger = ledger();
        ledger.advance(batch(acks(0, 140), acks(1, 150)), NOT_ASKED);
        assertNull(ledger.left().get(A), "the range was passed");
        assertNull(ledger.left().get(B), "not a position of this range");
    }

    @Test
    void whatTravelsToExecutorsIsACopy() {
        ResumeLedger ledger = ledger();
        ledger.left().get(A)[0] = 139;
        ledger.left().clear();
        assertEquals(100, ledger.left().get(A)[0]);
        assertEquals(2, ledger.left().size());
    }

    @Test
    void eachBatchOfOneQueryRunSharesTheLedgerAndANewRunStartsAfresh() {
        Map<String, long[]> ranges = Map.of(A, new long[] {100, 140});
        ResumeLedger first = ResumeLedger.of("f", "run-1", ranges);
        first.advance(batch(acks(0, 120)), NOT_ASKED);
        assertSame(first, ResumeLedger.of("f", "run-1", ranges), "the next batch's write of the same run");
        assertArrayEquals(new long[] {120, 140}, ResumeLedger.of("f", "run-1", ranges).left().get(A));
        ResumeLedger restarted = ResumeLedger.of("f", "run-2", ranges);
        assertArrayEquals(new long[] {100, 140}, restarted.left().get(A), "a restarted query compares from the start");
        assertArrayEquals(new long[] {100, 140}, ResumeLedger.of("g", "run-1", ranges).left().get(A),
            "another flow's ledger is its own");
    }

    @Test
    void reportsOfOtherKindsAndOtherPartitionsChangeNothing() {
        ResumeLedger ledger = ledger();
        ledger.advance(new WriterCommitMessage[] {null, new TaskReport("2", List.of(new PartitionAcks("u", 0)))}, NOT_ASKED);
        assertEquals(2, ledger.left().size());
    }

    private static PartitionAcks written(int partition, long targetStart, long count) {
        PartitionAcks acks = new PartitionAcks("t", partition);
        for (long i = 0; i < count; i++) {
            acks.pair(1000 + i, targetStart + i);
        }
        return acks;
    }

    @Test
    void eachBatchsWritesBeginWhereTheCommittedOnesBeforeItEnded() {
        ResumeLedger ledger = new ResumeLedger("run-2", Map.of(), Map.of(A, 100L, B, 200L));
        assertEquals(Map.of(A, 100L, B, 200L), ledger.batchStarts(), "the first batch: where this start begins");
        ledger.advance(batch(written(0, 100, 5)), NOT_ASKED);
        assertEquals(Map.of(A, 105L, B, 200L), ledger.batchStarts(), "partition 1 was not written: unchanged");
        ledger.advance(batch(written(1, 200, 2), written(2, 0, 1)), NOT_ASKED);
        assertEquals(Map.of(A, 105L, B, 202L, WriteSettings.key("t", 2), 1L), ledger.batchStarts());
        assertEquals(-1L, ResumeLedger.writtenEnd(new PartitionAcks("t", 3).runs()), "nothing written: none");
    }

    @Test
    void aRetriedAttemptsBatchComparesWhatLiesPastWhereTheNextBatchBegins() {
        // The lost attempt wrote 100..129 of partition 0; its retry began after the batch's time and read
        // nothing; the other task wrote 200..201 of partition 1 and nothing else is there.
        ResumeLedger ledger = new ResumeLedger("f", "run-3", Map.of(), Map.of(A, 100L, B, 200L));
        List<String> asked = new java.util.ArrayList<>();
        ledger.advance(new WriterCommitMessage[] {
            new TaskReport("1", List.of(), true), new TaskReport("2", List.of(written(1, 200, 2)))},
            keys -> {
                asked.addAll(keys);
                return Map.of(A, 130L, B, 202L);
            });
        assertEquals(2, asked.size(), "every partition the ledger knows, in one request");
        assertArrayEquals(new long[] {100, 130}, ledger.left().get(A), "compared by the next batches");
        assertNull(ledger.left().get(B), "it ends where its report says");
        ledger.advance(batch(acks(0, 118)), NOT_ASKED);
        assertArrayEquals(new long[] {118, 130}, ledger.left().get(A), "carried on as a replay's range");
    }

    @Test
    void aRetriedAttemptsRangeJoinsAReplayAlreadyLeft() {
        ResumeLedger ledger = new ResumeLedger("f", "run-4", Map.of(A, new long[] {90, 110}), Map.of(A, 100L));
        ledger.advance(new WriterCommitMessage[] {new TaskReport("1", List.of(), true)}, keys -> Map.of(A, 125L));
        assertArrayEquals(new long[] {90, 125}, ledger.left().get(A));
    }

    @Test
    void aTransactionalWriteNeverAsks() {
        ResumeLedger ledger = new ResumeLedger("f", "run-5", Map.of(), Map.of(A, 100L));
        ledger.advance(new WriterCommitMessage[] {new TaskReport("1", List.of(), true)}, null);
        assertTrue(ledger.left().isEmpty());
    }
}
