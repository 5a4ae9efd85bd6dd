package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
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
        Transactions.Entry entry = new Transactions.Entry("p-0", null, Map.of());
        entry.rate = rate;
        entry.bytes = last;
        TaskTransactions.Open txn = new TaskTransactions.Open(entry);
        TaskTransactions.Part part = new TaskTransactions.Part(new PartitionAcks("t", 0), Progress.NONE, null);
        part.dirty = true;
        txn.dirty.add(part);  // the partition the transaction wrote
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

    /** A producer whose flush waits until it is closed, as one adding a deleted topic's partition to its transaction. */
    private static final class StuckProducer extends MockProducer<byte[], byte[]> {
        private final CountDownLatch closed = new CountDownLatch(1);

        StuckProducer() {
            super(false, null, new ByteArraySerializer(), new ByteArraySerializer());
        }

        @Override
        public void flush() {
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close(Duration timeout) {
            super.close(timeout);
            closed.countDown();
        }
    }

    @Test
    void aFlushStillWaitingWhenTheTransactionTimesOutIsCutByClosingItsProducer() {
        StuckProducer stuck = new StuckProducer();
        long start = System.nanoTime();
        assertFalse(TaskTransactions.flushWithin(stuck, System.currentTimeMillis() + 300L), "cut");
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(took >= 250L && took < 10_000L, "cut at its deadline, not before and not never: " + took + " ms");
        assertTrue(stuck.closed(), "the producer is closed: it can hold nothing more");
        MockProducer<byte[], byte[]> prompt = new MockProducer<>(true, null, new ByteArraySerializer(),
            new ByteArraySerializer());
        assertTrue(TaskTransactions.flushWithin(prompt, System.currentTimeMillis() + 60_000L), "a flush that ends");
        assertFalse(prompt.closed(), "and its producer is kept");
        assertEquals(60_000L, TaskTransactions.timeoutMs(Map.of()), "Kafka's default transaction.timeout.ms");
    }

    /** The partition {@code txn} wrote (its acknowledgements are the task's). */
    private static PartitionAcks target(TaskTransactions.Open txn) {
        return txn.dirty.get(0).target;
    }

    @Test
    void aTransactionIsCommittedBeforeWhatItHoldsCannotDrainInTime() {
        TaskTransactions.Open idle = open(0, 0, 0);
        idle.begun = false;
        assertFalse(TaskTransactions.due(idle, 1_000_000L, 30_000L), "nothing open: nothing to commit");
        assertTrue(TaskTransactions.due(open(1e9, 0, 10), 30_000L, 30_000L), "the budget ran out, whatever the speed");
        assertFalse(TaskTransactions.due(open(0, 0, TaskTransactions.FIRST_BYTES - 1), 999L, 30_000L),
            "speed unknown: up to the first bytes");
        assertTrue(TaskTransactions.due(open(0, 0, TaskTransactions.FIRST_BYTES), 999L, 30_000L),
            "speed unknown: committed at the first bytes, which measures it");
        // 2 MB/s measured (about 2,000 bytes per ms), its own speed not read yet (under a second): 29 s left
        // drain 58 MB of what it sent.
        assertFalse(TaskTransactions.due(open(2_000, 0, 57_000_000L), 999L, 30_000L), "what drains in time stays open");
        assertTrue(TaskTransactions.due(open(2_000, 0, 59_000_000L), 999L, 30_000L), "more than drains in time: commit");
        assertFalse(TaskTransactions.due(open(1e6, 0, 500_000_000L), 999L, 30_000L), "a fast target: large transactions");
        assertFalse(TaskTransactions.due(open(0.001, 0, 10_000L), 999L, 30_000L), "a trickle still holds a little");
        // A burst taken fast (10 MB/s for the first 1 MB) then throttled: the next holds at most 2 MB, not 250 MB.
        assertTrue(TaskTransactions.due(open(10_000, TaskTransactions.FIRST_BYTES, 0, 2 * TaskTransactions.FIRST_BYTES),
            999L, 30_000L), "at most twice the last transaction");
        assertFalse(TaskTransactions.due(open(10_000, TaskTransactions.FIRST_BYTES, 0, 2 * TaskTransactions.FIRST_BYTES - 1),
            999L, 30_000L), "up to twice the last transaction");
    }

    @Test
    void whatTheTargetAcknowledgedAlreadyNeedsNoTimeAndASlowerOwnSpeedCounts() {
        // 20 s of a 30 s budget, 20 MB acknowledged (1 MB/s, slower than the last 2 MB/s): 10 s drain 10 MB.
        TaskTransactions.Open ahead = open(2_000, 0, 21_000_000L);
        target(ahead).ack(0L, 0L, 20_000_000L, 0L, 0L);
        assertFalse(TaskTransactions.due(ahead, 20_000L, 30_000L), "1 MB not acknowledged yet: stays open");
        TaskTransactions.Open behind = open(2_000, 0, 31_000_000L);
        target(behind).ack(0L, 0L, 20_000_000L, 0L, 0L);
        assertTrue(TaskTransactions.due(behind, 20_000L, 30_000L), "11 MB not acknowledged at 1 MB/s: commit");
    }

    @Test
    void aThrottleThatStartsInsideATransactionEndsItSooner() {
        // The last transaction took 4 MB at 10 MB/s (a quota's burst); this one has run 2 s of a 5 s budget,
        // sent 3 MB and the target acknowledged 1 MB: 500 bytes per ms now, so 3 s drain 1.5 MB, not the 2 MB left.
        TaskTransactions.Open throttled = open(10_000, 4_000_000L, 0, 3_000_000L);
        target(throttled).ack(0L, 0L, 1_000_000L, 0L, 0L);
        assertTrue(TaskTransactions.due(throttled, 2_000L, 5_000L), "acknowledged slower than the last speed: commit");
        TaskTransactions.Open early = open(10_000, 4_000_000L, 0, 3_000_000L);
        target(early).ack(0L, 0L, 1_000_000L, 0L, 0L);
        assertFalse(TaskTransactions.due(early, 999L, 5_000L), "too early to read its own speed: the last speed holds");
        TaskTransactions.Open flowing = open(10_000, 4_000_000L, 0, 3_000_000L);
        target(flowing).ack(0L, 0L, 2_500_000L, 0L, 0L);
        assertFalse(TaskTransactions.due(flowing, 2_000L, 5_000L), "acknowledged about as fast as sent: stays open");
        TaskTransactions.Open first = open(0, 0L, 0, 200_000L);
        assertTrue(TaskTransactions.due(first, 2_000L, 5_000L), "nothing acknowledged in 2 s of a first transaction");
    }
}
