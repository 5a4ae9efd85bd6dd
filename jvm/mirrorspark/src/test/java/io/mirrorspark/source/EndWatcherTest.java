package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The watcher of an idle query's ends, on a mock consumer: no broker, no Spark. */
final class EndWatcherTest {

    private static boolean within(long ms, BooleanSupplier condition) {
        long deadline = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return condition.getAsBoolean();
    }

    /** Armed at the ends: quiet until a record after them arrives; armed again after it: quiet again. */
    @Test
    void watcherWakesOnTheFirstRecordAfterTheEnds() {
        TopicPartition a = new TopicPartition("a", 0);
        TopicPartition b = new TopicPartition("b", 1);
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(Map.of(a, 0L, b, 0L));
        try (EndWatcher watcher = new EndWatcher(consumer, Duration.ofMillis(20), "test watcher")) {
            assertFalse(watcher.quiet(), "not armed: never quiet");
            watcher.arm(Map.of(a, 5L, b, 3L));
            assertTrue(watcher.quiet(), "armed: quiet");
            assertTrue(within(500, () -> consumer.assignment().equals(Set.of(a, b))), "both partitions watched");
            consumer.addRecord(new ConsumerRecord<>("a", 0, 4, new byte[0], new byte[0]));  // before the end: not new
            assertFalse(within(100, () -> !watcher.quiet()), "a record before the ends does not wake it");
            consumer.addRecord(new ConsumerRecord<>("b", 1, 3, new byte[0], new byte[0]));
            assertTrue(within(2000, () -> !watcher.quiet()), "the first record after the ends wakes it");
            watcher.arm(Map.of(a, 5L, b, 4L));
            assertFalse(within(100, () -> !watcher.quiet()), "armed after it: quiet again");
            watcher.disarm();
            assertFalse(watcher.quiet(), "disarmed: never quiet");
            watcher.arm(Map.of());
            assertTrue(watcher.quiet(), "nothing to watch: quiet");
        }
        assertTrue(consumer.closed(), "closed with the watcher");
    }

    /** An idle query waits in the watcher: the first record ends the wait at once, else the time does. */
    @Test
    void idleWaitEndsOnTheFirstRecordOrInTime() throws InterruptedException {
        TopicPartition a = new TopicPartition("a", 0);
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(Map.of(a, 0L));
        try (EndWatcher watcher = new EndWatcher(consumer, Duration.ofMillis(20), "test watcher")) {
            long started = System.nanoTime();
            watcher.awaitStir(5_000);
            assertTrue((System.nanoTime() - started) / 1_000_000 < 1_000, "not armed: no wait");
            watcher.arm(Map.of(a, 2L));
            assertTrue(within(500, () -> consumer.assignment().equals(Set.of(a))), "watched");
            started = System.nanoTime();
            watcher.awaitStir(300);
            long waited = (System.nanoTime() - started) / 1_000_000;
            assertTrue(waited >= 250, "nothing arrives: the whole wait (" + waited + " ms)");
            assertTrue(watcher.quiet(), "nothing arrives: still quiet");
            Thread feeder = new Thread(() -> {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                consumer.schedulePollTask(() -> consumer.addRecord(new ConsumerRecord<>("a", 0, 2, new byte[0],
                    new byte[0])));
            });
            feeder.start();
            started = System.nanoTime();
            watcher.awaitStir(10_000);
            waited = (System.nanoTime() - started) / 1_000_000;
            assertTrue(waited < 3_000, "the first record ends the wait (" + waited + " ms)");
            assertFalse(watcher.quiet(), "the first record ends the wait");
        }
    }

    /** Counts seeks: each one is a partition the watcher positioned again. */
    private static final class CountingConsumer extends MockConsumer<byte[], byte[]> {
        final AtomicInteger seeks = new AtomicInteger();

        CountingConsumer() {
            super(OffsetResetStrategy.NONE);
        }

        @Override
        public synchronized void seek(TopicPartition partition, long offset) {
            seeks.incrementAndGet();
            super.seek(partition, offset);
        }
    }

    /**
     * The driver arms the watcher again after every quiet check: the same ends leave it watching as it
     * was (no seek of every partition), new ends or ends after a wake position it again.
     */
    @Test
    void armedAgainWithTheSameEndsTheWatcherKeepsWatching() {
        TopicPartition a = new TopicPartition("a", 0);
        TopicPartition b = new TopicPartition("b", 0);
        CountingConsumer consumer = new CountingConsumer();
        consumer.updateBeginningOffsets(Map.of(a, 0L, b, 0L));
        try (EndWatcher watcher = new EndWatcher(consumer, Duration.ofMillis(20), "test watcher")) {
            watcher.arm(Map.of(a, 5L, b, 3L));
            assertTrue(within(500, () -> consumer.seeks.get() == 2), "both partitions positioned");
            watcher.arm(new java.util.HashMap<>(Map.of(a, 5L, b, 3L)));
            assertFalse(within(200, () -> consumer.seeks.get() > 2), "the same ends: not positioned again");
            assertTrue(watcher.quiet(), "still quiet");
            consumer.schedulePollTask(() -> consumer.addRecord(new ConsumerRecord<>("b", 0, 3, new byte[0],
                new byte[0])));
            assertTrue(within(2000, () -> !watcher.quiet()), "a record after the ends still wakes it");
            watcher.arm(Map.of(a, 5L, b, 3L));
            assertTrue(watcher.quiet(), "armed after the wake: quiet");
            assertTrue(within(500, () -> consumer.seeks.get() == 4), "after a wake the same ends are positioned again");
            watcher.arm(Map.of(a, 5L, b, 4L));
            assertTrue(within(500, () -> consumer.seeks.get() == 6), "new ends: positioned again");
        }
    }

    /** The watcher's fetch waits one idle check at the broker, under half the user's request timeout. */
    @Test
    void watchWaitIsOneCheckUnderHalfTheRequestTimeout() {
        assertEquals(5_000L, GroupedMicroBatchStream.watchWaitMs(5_000L, null));
        assertEquals(3_000L, GroupedMicroBatchStream.watchWaitMs(5_000L, "6000"));
        assertEquals(5_000L, GroupedMicroBatchStream.watchWaitMs(5_000L, "30000"));
        assertEquals(5_000L, GroupedMicroBatchStream.watchWaitMs(5_000L, "not a number"));
        assertEquals(1L, GroupedMicroBatchStream.watchWaitMs(0L, null));
    }
}
