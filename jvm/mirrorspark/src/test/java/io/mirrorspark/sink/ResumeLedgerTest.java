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
        ledger.advance(batch(acks(0, 103)));
        HashMap<String, long[]> left = ledger.left();
        assertArrayEquals(new long[] {103, 140}, left.get(A));
        assertArrayEquals(new long[] {200, 220}, left.get(B), "no rows of partition 1 in that batch: untouched");
    }

    @Test
    void aComparisonThatEndedIsNotTakenUpAgain() {
        ResumeLedger ledger = ledger();
        ledger.advance(batch(acks(0, -1), acks(1, 210)));
        ledger.advance(batch(acks(1, -1)));
        assertTrue(ledger.left().isEmpty());
    }

    @Test
    void aNextOffsetOutsideTheRangeEndsIt() {
        ResumeLedger ledger = ledger();
        ledger.advance(batch(acks(0, 140), acks(1, 150)));
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
        first.advance(batch(acks(0, 120)));
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
        ledger.advance(new WriterCommitMessage[] {null, new TaskReport("2", List.of(new PartitionAcks("u", 0)))});
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
        ledger.advance(batch(written(0, 100, 5)));
        assertEquals(Map.of(A, 105L, B, 200L), ledger.batchStarts(), "partition 1 was not written: unchanged");
        ledger.advance(batch(written(1, 200, 2), written(2, 0, 1)));
        assertEquals(Map.of(A, 105L, B, 202L, WriteSettings.key("t", 2), 1L), ledger.batchStarts());
        assertEquals(-1L, ResumeLedger.writtenEnd(new PartitionAcks("t", 3).runs()), "nothing written: none");
    }
}
