package io.mirrorspark.source;

import static io.mirrorspark.UnitChecks.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.mirrorspark.UnitChecks;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

/**
 * The source's planning logic without brokers or Spark: run by tests/unit/test_jvm_units.py
 * (exit code 1 and the failed check on standard error when one fails).
 */
public final class SourceUnitTests {
    private SourceUnitTests() {
    }

    static void groupsAreBalancedByRecords() {
        List<OffsetRange> ranges = new ArrayList<>();
        ranges.add(new OffsetRange("busy", 0, 0, 1000));
        ranges.add(new OffsetRange("busy", 1, 0, 900));
        for (int p = 0; p < 20; p++) {
            ranges.add(new OffsetRange("quiet", p, 5, 10));
        }
        List<List<OffsetRange>> groups = RangeGroups.split(ranges, 2);
        check(groups.size() == 2, "two groups, got " + groups.size());
        long a = groups.get(0).stream().mapToLong(OffsetRange::size).sum();
        long b = groups.get(1).stream().mapToLong(OffsetRange::size).sum();
        check(a + b == 2000, "every record planned once: " + (a + b));
        check(Math.abs(a - b) <= 100, "balanced by records: " + a + " vs " + b);
        check(groups.get(0).get(0).partition != groups.get(1).get(0).partition, "the two busy partitions apart");
    }

    static void everyPartitionInExactlyOneGroup() {
        List<OffsetRange> ranges = new ArrayList<>();
        for (int p = 0; p < 3000; p++) {
            ranges.add(new OffsetRange("t" + (p / 10), p % 10, 0, 20));
        }
        ranges.add(new OffsetRange("empty", 0, 7, 7));
        List<List<OffsetRange>> groups = RangeGroups.split(ranges, 4);
        check(groups.size() == 4, "3,000 partitions in 4 tasks, got " + groups.size());
        Set<String> seen = new HashSet<>();
        for (List<OffsetRange> g : groups) {
            check(g.size() == 750, "750 partitions per task, got " + g.size());
            for (OffsetRange r : g) {
                check(seen.add(r.topic + "-" + r.partition), "planned twice: " + r);
            }
        }
        check(seen.size() == 3000 && !seen.contains("empty-0"), "every partition with records, no empty range");
    }

    static void fewerRangesThanGroups() {
        List<List<OffsetRange>> groups = RangeGroups.split(List.of(new OffsetRange("t", 0, 0, 1)), 8);
        check(groups.size() == 1, "one range, one task");
        check(RangeGroups.split(List.of(), 8).isEmpty(), "nothing to read, no task");
    }

    static void offsetsJsonRoundTrip() {
        Map<TopicPartition, Long> positions = new HashMap<>();
        positions.put(new TopicPartition("a.b", 10), 7L);
        positions.put(new TopicPartition("a.b", 2), 0L);
        positions.put(new TopicPartition("q\"uote", 0), 123456789012L);
        String json = new PartitionOffsets(positions).json();
        check(json.equals("{\"a.b\":{\"2\":0,\"10\":7},\"q\\\"uote\":{\"0\":123456789012}}"), "Spark's JSON, sorted: " + json);
        check(PartitionOffsets.parse(json).positions().equals(positions), "parses back");
        check(PartitionOffsets.parse("{\"t\":{\"0\":-2,\"1\":-1}}").positions().get(new TopicPartition("t", 1)) == -1L,
            "earliest/latest markers kept for the caller");
        try {
            PartitionOffsets.parse("[1]");
            check(false, "a non-object is refused");
        } catch (IllegalArgumentException expected) {
            check(true, "a non-object is refused");
        }
    }

    static void fetchWaitIsCapped() {
        check(ConsumerPool.fetchWait(null) == ConsumerPool.FETCH_WAIT_CAP_MS, "unset: the cap");
        check(ConsumerPool.fetchWait("500") == ConsumerPool.FETCH_WAIT_CAP_MS, "Kafka's default is capped");
        check(ConsumerPool.fetchWait(" 5 ") == 5L, "a shorter wait is kept");
        check(ConsumerPool.fetchWait("soon") == ConsumerPool.FETCH_WAIT_CAP_MS, "not a number: the cap");
    }

    /** Offsets 2-4 removed by retention before the task read them: skipped, or with data.loss = fail, an error. */
    static void removedRecordsAreSkippedOrFailTheTask() {
        TopicPartition tp = new TopicPartition("t", 0);
        for (boolean fail : new boolean[] {false, true}) {
            Map<String, String> options = new HashMap<>();
            options.put("kafka.bootstrap.servers", "unused:9092");
            options.put("subscribePattern", "t");
            options.put("failOnDataLoss", String.valueOf(fail));
            MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
            consumer.updateBeginningOffsets(Map.of(tp, 5L));
            consumer.updateEndOffsets(Map.of(tp, 10L));
            GroupReader reader = new GroupReader(new SourceSettings(options), List.of(new OffsetRange("t", 0, 2, 10)),
                consumer);
            for (long offset = 5; offset < 10; offset++) {
                consumer.addRecord(new ConsumerRecord<>("t", 0, offset, new byte[0], new byte[] {(byte) offset}));
            }
            List<Long> read = new ArrayList<>();
            String error = null;
            try {
                while (reader.next()) {
                    read.add(reader.get().getLong(4));
                }
            } catch (GroupReader.DataLossException e) {
                error = e.getMessage();
            }
            reader.close();
            if (fail) {
                check(read.isEmpty() && error != null && error.contains("t-0: offsets 2 to 4 were removed")
                    && error.contains("mirrorspark.data.loss = fail"), "data.loss = fail: the task fails: " + error);
            } else {
                check(error == null && read.equals(List.of(5L, 6L, 7L, 8L, 9L)), "skipped to the earliest: " + read);
            }
        }
    }

    /**
     * A partition whose records 2-9 are due and never come (its broker down) fails the task, nothing
     * skipped; one whose topic the source no longer lists (deleted) is given up, the others read.
     */
    static void stalledRecordsFailTheTaskAndOnlyADeletedTopicIsGivenUp() {
        TopicPartition tp = new TopicPartition("t", 0);
        for (boolean deleted : new boolean[] {false, true}) {
            Map<String, String> options = new HashMap<>();
            options.put("kafka.bootstrap.servers", "unused:9092");
            options.put("subscribePattern", "t");
            options.put("pollTimeoutMs", "500");
            MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
            consumer.updateBeginningOffsets(Map.of(tp, 0L));
            consumer.updateEndOffsets(Map.of(tp, 10L));
            if (!deleted) {
                consumer.updatePartitions("t", List.of(new org.apache.kafka.common.PartitionInfo("t", 0, null,
                    new org.apache.kafka.common.Node[0], new org.apache.kafka.common.Node[0])));
            }
            GroupReader reader = new GroupReader(new SourceSettings(options), List.of(new OffsetRange("t", 0, 2, 10)),
                consumer);
            String error = null;
            boolean more = true;
            long started = System.currentTimeMillis();
            try {
                more = reader.next();
            } catch (GroupReader.SourceStalledException e) {
                error = e.getMessage();
            }
            reader.close();
            if (deleted) {
                check(error == null && !more, "a deleted topic's range is given up: " + error);
            } else {
                check(error != null && error.contains("t-0 at 2 (batch end 10)") && error.contains("nothing skipped"),
                    "due records that do not come fail the task, nothing skipped: " + error + ", more " + more);
                check(System.currentTimeMillis() - started >= 500, "not before pollTimeoutMs");
            }
        }
    }

    /** Heartbeats alone wait up to holdMs; any other record, a new or vanished partition, or the wait's end releases them. */
    static void heartbeatsAloneAreHeldThenCarried() {
        TopicPartition hb = new TopicPartition("a.heartbeats", 0);
        TopicPartition data = new TopicPartition("orders", 0);
        IdleHold hold = new IdleHold("(?:.*\\.)?heartbeats", 5000);
        Map<TopicPartition, Long> start = Map.of(hb, 10L, data, 7L);
        check(hold.apply(start, Map.of(hb, 11L, data, 7L), 1000).equals(start), "a heartbeat alone is held");
        check(!hold.due(5999) && hold.due(6000), "due when the wait ends, not before");
        check(hold.unheld(Map.of(hb, 11L, data, 7L)).equals(Map.of(data, 7L)), "the watched ends leave heartbeats out");
        check(hold.apply(start, Map.of(hb, 14L, data, 7L), 5999).equals(start), "still held before the wait ends");
        check(hold.apply(start, Map.of(hb, 15L, data, 7L), 6000).get(hb) == 15L, "released when the wait ends");
        check(hold.apply(start, Map.of(hb, 16L, data, 7L), 6001).equals(start), "a new wait starts after the release");
        Map<TopicPartition, Long> both = Map.of(hb, 16L, data, 8L);
        check(hold.apply(start, both, 6002).equals(both), "a real record takes the heartbeats with it at once");
        check(hold.apply(start, Map.of(hb, 17L, data, 7L), 6003).equals(start), "held again, a fresh wait");
        check(hold.apply(start, Map.of(hb, 17L, data, 7L), 11002).equals(start), "the fresh wait began at 6003");
        TopicPartition added = new TopicPartition("new", 0);
        Map<TopicPartition, Long> grown = Map.of(hb, 17L, data, 7L, added, 0L);
        check(hold.apply(start, grown, 11003).equals(grown), "a new partition is planned at once");
        check(hold.apply(start, Map.of(hb, 17L), 11004).get(hb) == 17L, "a vanished partition is planned at once");
        TopicPartition newHb = new TopicPartition("b.heartbeats", 0);
        check(hold.apply(start, Map.of(hb, 10L, data, 7L, newHb, 3L), 20000).equals(start),
            "a new heartbeats partition waits too");
        check(new IdleHold("(?:.*\\.)?heartbeats", 0).apply(start, Map.of(hb, 11L, data, 7L), 1).get(hb) == 11L,
            "holdMs 0: nothing held");
        check(new IdleHold("", 5000).apply(start, Map.of(hb, 11L, data, 7L), 1).get(hb) == 11L,
            "no pattern: nothing held");
    }

    private static boolean within(long ms, java.util.function.BooleanSupplier condition) {
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
    static void watcherWakesOnTheFirstRecordAfterTheEnds() {
        TopicPartition a = new TopicPartition("a", 0);
        TopicPartition b = new TopicPartition("b", 1);
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(Map.of(a, 0L, b, 0L));
        try (EndWatcher watcher = new EndWatcher(consumer, java.time.Duration.ofMillis(20), "test watcher")) {
            check(!watcher.quiet(), "not armed: never quiet");
            watcher.arm(Map.of(a, 5L, b, 3L));
            check(watcher.quiet(), "armed: quiet");
            check(within(500, () -> consumer.assignment().equals(Set.of(a, b))), "both partitions watched");
            consumer.addRecord(new ConsumerRecord<>("a", 0, 4, new byte[0], new byte[0]));  // before the end: not new
            check(within(100, () -> !watcher.quiet()) == false, "a record before the ends does not wake it");
            consumer.addRecord(new ConsumerRecord<>("b", 1, 3, new byte[0], new byte[0]));
            check(within(2000, () -> !watcher.quiet()), "the first record after the ends wakes it");
            watcher.arm(Map.of(a, 5L, b, 4L));
            check(within(100, () -> !watcher.quiet()) == false, "armed after it: quiet again");
            watcher.disarm();
            check(!watcher.quiet(), "disarmed: never quiet");
            watcher.arm(Map.of());
            check(watcher.quiet(), "nothing to watch: quiet");
        }
        check(consumer.closed(), "closed with the watcher");
    }

    /** An idle query waits in the watcher: the first record ends the wait at once, else the time does. */
    static void idleWaitEndsOnTheFirstRecordOrInTime() {
        TopicPartition a = new TopicPartition("a", 0);
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(Map.of(a, 0L));
        try (EndWatcher watcher = new EndWatcher(consumer, java.time.Duration.ofMillis(20), "test watcher")) {
            long started = System.nanoTime();
            try {
                watcher.awaitStir(5_000);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            check((System.nanoTime() - started) / 1_000_000 < 1_000, "not armed: no wait");
            watcher.arm(Map.of(a, 2L));
            check(within(500, () -> consumer.assignment().equals(Set.of(a))), "watched");
            started = System.nanoTime();
            try {
                watcher.awaitStir(300);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            long waited = (System.nanoTime() - started) / 1_000_000;
            check(waited >= 250 && watcher.quiet(), "nothing arrives: the whole wait (" + waited + " ms)");
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
            try {
                watcher.awaitStir(10_000);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            waited = (System.nanoTime() - started) / 1_000_000;
            check(waited < 3_000 && !watcher.quiet(), "the first record ends the wait (" + waited + " ms)");
        }
    }

    /** Each partition's records stop at its own end, whichever partition the records before came from. */
    static void eachPartitionEndsAtItsOwnEnd() {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "a|b");
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        GroupReader reader = new GroupReader(new SourceSettings(options), List.of(new OffsetRange("a", 0, 0, 3),
            new OffsetRange("a", 1, 0, 2), new OffsetRange("b", 0, 5, 7), new OffsetRange("b", 1, 4, 4)), consumer);
        for (long offset = 0; offset < 5; offset++) {
            consumer.addRecord(new ConsumerRecord<>("a", 0, offset, new byte[0], new byte[0]));
            consumer.addRecord(new ConsumerRecord<>("a", 1, offset, new byte[0], new byte[0]));
            consumer.addRecord(new ConsumerRecord<>("b", 0, offset + 5, new byte[0], new byte[0]));
        }
        Set<String> read = new HashSet<>();
        int rows = 0;
        while (reader.next()) {
            rows++;
            read.add(reader.get().getUTF8String(2) + "-" + reader.get().getInt(3) + "@" + reader.get().getLong(4));
        }
        reader.close();
        check(rows == 7 && read.equals(Set.of("a-0@0", "a-0@1", "a-0@2", "a-1@0", "a-1@1", "b-0@5", "b-0@6")),
            "every partition up to its own end, once: " + read);
    }

    public static void main(String[] args) {
        eachPartitionEndsAtItsOwnEnd();
        idleWaitEndsOnTheFirstRecordOrInTime();
        watcherWakesOnTheFirstRecordAfterTheEnds();
        heartbeatsAloneAreHeldThenCarried();
        fetchWaitIsCapped();
        removedRecordsAreSkippedOrFailTheTask();
        stalledRecordsFailTheTaskAndOnlyADeletedTopicIsGivenUp();
        groupsAreBalancedByRecords();
        everyPartitionInExactlyOneGroup();
        fewerRangesThanGroups();
        offsetsJsonRoundTrip();
        UnitChecks.done();
    }
}
