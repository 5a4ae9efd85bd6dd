package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import io.mirrorspark.kafka.OffsetRunList;
import io.mirrorspark.kafka.OffsetRuns;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.junit.jupiter.api.Test;

/**
 * An exactly-once batch run again after a crash, without Kafka: rows skipped as committed whose target
 * offset the progress does not know (older than the pairs it keeps, or sent by an earlier mid-batch
 * transaction) leave one break in the reported runs, where they are in source order, so the driver
 * never takes the gap for contiguous and never translates past records the target holds.
 */
final class ProgressGapsTest {

    private static TaskTransactions.Part open(Progress progress) {
        return new TaskTransactions.Part(new PartitionAcks("t", 0), progress, null);
    }

    /** Rows {@code from .. to - 1} of a re-run, each found committed. */
    private static void skip(TaskTransactions.Part txn, long from, long to) {
        for (long upstream = from; upstream < to; upstream++) {
            assertTrue(TaskTransactions.committed(txn, upstream), "row " + upstream + " is committed");
        }
    }

    private static String drained(String flow, PartitionAcks acks) {
        WrittenBatches.accept(flow, new WriterCommitMessage[] {new TaskReport("1", List.of(acks))});
        return OffsetRuns.drain(flow);
    }

    /** Committed up to 20; the pairs kept cover 10..19 only (the older ones did not fit the metadata). */
    @Test
    void rowsOlderThanThePairsKeptLeaveOneBreakBeforeTheKnownRun() {
        TaskTransactions.Part older = open(Progress.decode(20, "ms1p;10:110:10"));
        skip(older, 0, 20);
        older.target.ack(20, 120, 1, 0, 0);  // the first row sent again continues the known run
        assertEquals(OffsetRunList.of(0, -1, 0, 10, 110, 11), older.target.runs(),
            "one break for the unknown rows, then the known run");
        assertEquals("t\t0\t-1\t-1\t0\nt\t0\t10\t110\t11\n", drained("gaps-older", older.target),
            "the driver drains the break before the run");
    }

    /** Known, unknown (an earlier transaction's rows), known: the break sits between the runs. */
    @Test
    void anEarlierTransactionsRowsBreakBetweenTwoKnownRuns() {
        TaskTransactions.Part middle = open(Progress.decode(30, "ms1;0:100:10,20:120:10"));
        skip(middle, 0, 30);
        assertEquals("t\t0\t0\t100\t10\nt\t0\t-1\t-1\t0\nt\t0\t20\t120\t10\n", drained("gaps-middle", middle.target),
            "a break between two known runs");
    }

    /** Unknown rows at the end of the batch: the break is the last line, the next batch does not continue. */
    @Test
    void unknownRowsAtTheEndLeaveABreakLast() {
        TaskTransactions.Part tail = open(Progress.decode(20, "ms1;0:100:10"));
        skip(tail, 0, 20);
        assertEquals("t\t0\t0\t100\t10\nt\t0\t-1\t-1\t0\n", drained("gaps-tail", tail.target),
            "a break after the last known run");
    }

    /** Every pair known: no break, one run. */
    @Test
    void knownPairsStayOneRun() {
        TaskTransactions.Part known = open(Progress.decode(10, "ms1;0:100:10"));
        skip(known, 0, 10);
        assertEquals("t\t0\t0\t100\t10\n", drained("gaps-known", known.target), "known pairs stay one run");
    }

    /** A record acknowledged without an offset is a gap too. */
    @Test
    void anAcknowledgementWithoutAnOffsetBreaksTheRun() {
        PartitionAcks acks = new PartitionAcks("t", 1);
        acks.ack(0, 50, 1, 0, 0);
        acks.ack(1, -1, 1, 0, 0);
        acks.ack(2, 52, 1, 0, 0);
        assertEquals(OffsetRunList.of(0, 50, 1, 1, -1, 0, 2, 52, 1), acks.runs(),
            "an acknowledgement without an offset breaks the run");
    }
}
