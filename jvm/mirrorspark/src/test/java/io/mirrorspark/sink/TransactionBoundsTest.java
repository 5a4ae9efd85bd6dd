package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * When an exactly-once transaction is committed mid-batch, without Kafka: within half of
 * {@code transaction.timeout.ms}, and before it holds more than the partition drains in the time
 * left, so a slow target never lets the broker abort it.
 */
final class TransactionBoundsTest {

    private static TaskTransactions.Open open(double rate, long begunAt, long bytes) {
        return open(rate, 1L << 40, begunAt, bytes);
    }

    /** A transaction begun at {@code begunAt} holding {@code bytes}; the last one ran at {@code rate} with {@code last} bytes. */
    private static TaskTransactions.Open open(double rate, long last, long begunAt, long bytes) {
        Transactions.Entry entry = new Transactions.Entry("p-t-0", null, new TopicPartition("t", 0), Progress.NONE);
        entry.rate = rate;
        entry.bytes = last;
        TaskTransactions.Open txn = new TaskTransactions.Open(entry, new PartitionAcks("t", 0));
        txn.begun = true;
        txn.begunAt = begunAt;
        txn.bytes = bytes;
        return txn;
    }

    @Test
    void theBudgetIsHalfTheTransactionTimeout() {
        assertEquals(30_000L, TaskTransactions.budgetMs(Map.of()), "half of Kafka's default 60 s");
        assertEquals(450_000L, TaskTransactions.budgetMs(Map.of("transaction.timeout.ms", "900000")), "half of the set one");
        assertEquals(30_000L, TaskTransactions.budgetMs(Map.of("transaction.timeout.ms", "soon")), "unreadable: default");
    }

    @Test
    void aTransactionIsCommittedBeforeItHoldsMoreThanDrainsInTime() {
        TaskTransactions.Open idle = open(0, 0, 0);
        idle.begun = false;
        assertFalse(TaskTransactions.due(idle, 1_000_000L, 30_000L), "nothing open: nothing to commit");
        assertTrue(TaskTransactions.due(open(1e9, 0, 10), 30_000L, 30_000L), "the budget ran out, whatever the speed");
        assertFalse(TaskTransactions.due(open(0, 0, TaskTransactions.FIRST_BYTES - 1), 1_000L, 30_000L),
            "speed unknown: up to the first bytes");
        assertTrue(TaskTransactions.due(open(0, 0, TaskTransactions.FIRST_BYTES), 1_000L, 30_000L),
            "speed unknown: committed at the first bytes, which measures it");
        // 2 MB/s measured (about 2,000 bytes per ms): 10 s left allow 20 MB, not 40 MB.
        assertFalse(TaskTransactions.due(open(2_000, 0, 19_000_000L), 20_000L, 30_000L), "what drains in time stays open");
        assertTrue(TaskTransactions.due(open(2_000, 0, 21_000_000L), 20_000L, 30_000L), "more than drains in time: commit");
        assertFalse(TaskTransactions.due(open(1e6, 0, 500_000_000L), 1_000L, 30_000L), "a fast target: large transactions");
        assertFalse(TaskTransactions.due(open(0.001, 0, 10_000L), 1_000L, 30_000L), "a trickle still holds a little");
        // A burst taken fast (10 MB/s for the first 1 MB) then throttled: the next holds at most 2 MB, not 250 MB.
        assertTrue(TaskTransactions.due(open(10_000, TaskTransactions.FIRST_BYTES, 0, 2 * TaskTransactions.FIRST_BYTES),
            1_000L, 30_000L), "at most twice the last transaction");
        assertFalse(TaskTransactions.due(open(10_000, TaskTransactions.FIRST_BYTES, 0, 2 * TaskTransactions.FIRST_BYTES - 1),
            1_000L, 30_000L), "up to twice the last transaction");
    }
}
