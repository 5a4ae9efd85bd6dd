package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import java.util.Arrays;
import java.util.List;

import io.mirrorspark.UnitChecks;
import io.mirrorspark.kafka.OffsetRuns;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * An exactly-once batch run again after a crash, without Kafka: rows skipped as committed whose target
 * offset the progress does not know (older than the pairs it keeps, or sent by an earlier mid-batch
 * transaction) leave one break in the reported runs, where they are in source order, so the driver
 * never takes the gap for contiguous and never translates past records the target holds. Run by
 * tests/unit/test_jvm_units.py.
 */
public final class ProgressGapsUnitTests {
    private ProgressGapsUnitTests() {
    }

    private static TaskTransactions.Open open(Progress progress) {
        Transactions.Entry entry = new Transactions.Entry("p-t-0", null, new TopicPartition("t", 0), progress);
        return new TaskTransactions.Open(entry, new PartitionAcks("t", 0));
    }

    /** Rows {@code from .. to - 1} of a re-run, each found committed. */
    private static void skip(TaskTransactions.Open txn, long from, long to) {
        for (long upstream = from; upstream < to; upstream++) {
            check(TaskTransactions.committed(txn, upstream), "row " + upstream + " is committed");
        }
    }

    private static String drained(String flow, PartitionAcks acks) {
        WrittenBatches.accept(flow, new WriterCommitMessage[] {new TaskReport("1", List.of(acks))});
        return OffsetRuns.drain(flow);
    }

    public static void main(String[] args) {
        // Committed up to 20; the pairs kept cover 10..19 only (the older ones did not fit the metadata).
        TaskTransactions.Open older = open(Progress.decode(20, "ms1p;10:110:10"));
        skip(older, 0, 20);
        older.target.ack(20, 120, 1, 0, 0);  // the first row sent again continues the known run
        long[] runs = older.target.runs();
        check(Arrays.equals(runs, new long[] {0, -1, 0, 10, 110, 11}),
            "one break for the unknown rows, then the known run: " + Arrays.toString(runs));
        check(drained("gaps-older", older.target).equals("t\t0\t-1\t-1\t0\nt\t0\t10\t110\t11\n"),
            "the driver drains the break before the run");

        // Known, unknown (an earlier transaction's rows), known: the break sits between the runs.
        TaskTransactions.Open middle = open(Progress.decode(30, "ms1;0:100:10,20:120:10"));
        skip(middle, 0, 30);
        check(drained("gaps-middle", middle.target).equals(
            "t\t0\t0\t100\t10\nt\t0\t-1\t-1\t0\nt\t0\t20\t120\t10\n"), "a break between two known runs");

        // Unknown rows at the end of the batch: the break is the last line, the next batch does not continue.
        TaskTransactions.Open tail = open(Progress.decode(20, "ms1;0:100:10"));
        skip(tail, 0, 20);
        check(drained("gaps-tail", tail.target).equals("t\t0\t0\t100\t10\nt\t0\t-1\t-1\t0\n"),
            "a break after the last known run");

        // Every pair known: no break, one run.
        TaskTransactions.Open known = open(Progress.decode(10, "ms1;0:100:10"));
        skip(known, 0, 10);
        check(drained("gaps-known", known.target).equals("t\t0\t0\t100\t10\n"), "known pairs stay one run");

        // A record acknowledged without an offset is a gap too.
        PartitionAcks acks = new PartitionAcks("t", 1);
        acks.ack(0, 50, 1, 0, 0);
        acks.ack(1, -1, 1, 0, 0);
        acks.ack(2, 52, 1, 0, 0);
        check(Arrays.equals(acks.runs(), new long[] {0, 50, 1, 1, -1, 0, 2, 52, 1}),
            "an acknowledgement without an offset breaks the run: " + Arrays.toString(acks.runs()));
        UnitChecks.done();
    }
}
