package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
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
}
