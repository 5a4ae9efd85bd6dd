package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.Test;

/**
 * A batch's plan from its start and end offsets, without brokers or Spark; where a partition is new
 * in a batch, its earliest offset comes from a mock driver consumer.
 */
final class GroupedMicroBatchStreamTest {

    /** {@code maxRecords}: the batch bound ({@code maxOffsetsPerTrigger}), null: none. */
    private static SourceSettings settings(int groups, String maxRecords) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "t|u|v|gone");
        options.put("groups", String.valueOf(groups));
        options.put("idleCheckMs", "0");  // no end watcher: it would need a broker
        if (maxRecords != null) {
            options.put("maxOffsetsPerTrigger", maxRecords);
        }
        return new SourceSettings(options);
    }

    private static GroupedMicroBatchStream stream(int groups) {
        return new GroupedMicroBatchStream(settings(groups, null), "unused-checkpoint");
    }

    private static Map<TopicPartition, Long> offsets(Object... topicPartitionOffset) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (int i = 0; i < topicPartitionOffset.length; i += 3) {
            out.put(new TopicPartition((String) topicPartitionOffset[i], (Integer) topicPartitionOffset[i + 1]),
                (Long) topicPartitionOffset[i + 2]);
        }
        return out;
    }

    /** The driver's consumer of a source whose partitions begin at {@code earliest} and end at {@code ends}. */
    private static MockConsumer<byte[], byte[]> source(Map<TopicPartition, Long> earliest, Map<TopicPartition, Long> ends) {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(earliest);
        consumer.updateEndOffsets(ends);
        Map<String, List<PartitionInfo>> topics = new HashMap<>();
        for (TopicPartition tp : ends.keySet()) {
            topics.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(new PartitionInfo(tp.topic(), tp.partition(), null, null, null));
        }
        topics.forEach(consumer::updatePartitions);
        return consumer;
    }

    private static List<List<String>> plan(int groups, Map<TopicPartition, Long> start, Map<TopicPartition, Long> end) {
        return plan(stream(groups), start, end);
    }

    private static List<List<String>> plan(GroupedMicroBatchStream stream, Map<TopicPartition, Long> start,
                                           Map<TopicPartition, Long> end) {
        InputPartition[] tasks = stream.planInputPartitions(new PartitionOffsets(start), new PartitionOffsets(end));
        List<List<String>> out = new ArrayList<>();
        for (InputPartition task : tasks) {
            List<String> ranges = new ArrayList<>();
            for (OffsetRange r : ((GroupPartition) task).ranges) {
                ranges.add(r.topic + "-" + r.partition + ":" + r.from + ".." + r.until);
            }
            ranges.sort(null);
            out.add(ranges);
        }
        return out;
    }

    @Test
    void eachPartitionIsReadFromItsStartToItsEnd() {
        List<List<String>> tasks = plan(1, offsets("t", 0, 5L, "t", 1, 0L, "u", 0, 7L),
            offsets("t", 0, 10L, "t", 1, 3L, "u", 0, 7L));
        assertEquals(List.of(List.of("t-0:5..10", "t-1:0..3")), tasks, "a partition without new records is not planned");
    }

    @Test
    void theRecordsAreSpreadOverTheGroups() {
        List<List<String>> tasks = plan(2, offsets("t", 0, 0L, "t", 1, 0L, "u", 0, 0L),
            offsets("t", 0, 100L, "t", 1, 60L, "u", 0, 50L));
        assertEquals(2, tasks.size(), "two tasks");
        List<String> all = new ArrayList<>();
        tasks.forEach(all::addAll);
        all.sort(null);
        assertEquals(List.of("t-0:0..100", "t-1:0..60", "u-0:0..50"), all, "every partition planned once");
        assertTrue(tasks.contains(List.of("t-0:0..100")), "the busiest partition alone: " + tasks);
    }

    @Test
    void aPartitionGoneOrGoneBackIsNotPlanned() {
        // gone-0 left the source (its topic deleted); u-0 ends below its start (its topic re-created).
        List<List<String>> tasks = plan(4, offsets("t", 0, 5L, "gone", 0, 3L, "u", 0, 40L),
            offsets("t", 0, 9L, "u", 0, 2L));
        assertEquals(List.of(List.of("t-0:5..9")), tasks, "only the partition still there, read forward");
    }

    @Test
    void anAddedTopicOrPartitionIsReadFromItsEarliestOffsetInTheGroups() {
        // t-1 (a partition added to t) kept records from 20 on; v (a topic created since) from 0.
        MockConsumer<byte[], byte[]> driver = source(offsets("t", 1, 20L, "v", 0, 0L), Map.of());
        GroupedMicroBatchStream s = new GroupedMicroBatchStream(settings(2, null), "unused-checkpoint", driver);
        List<List<String>> tasks = plan(s, offsets("t", 0, 5L), offsets("t", 0, 10L, "t", 1, 30L, "v", 0, 12L));
        assertEquals(List.of(List.of("v-0:0..12"), List.of("t-0:5..10", "t-1:20..30")), tasks,
            "the new partitions from their earliest offsets; the largest range alone, the two smaller together");
        s.stop();
        assertTrue(driver.closed(), "the driver's consumer is closed with the stream");
    }

    @Test
    void aBoundedBatchSharesItsRecordsWithAnAddedPartitionByItsSize() {
        // t-0 was read to 0; t-1 was added with records 50..99: 150 records wait, 30 are taken.
        MockConsumer<byte[], byte[]> driver = source(offsets("t", 1, 50L), offsets("t", 0, 100L, "t", 1, 100L));
        GroupedMicroBatchStream s = new GroupedMicroBatchStream(settings(2, "30"), "unused-checkpoint", driver);
        PartitionOffsets start = new PartitionOffsets(offsets("t", 0, 0L));
        Offset end = s.latestOffset(start, s.getDefaultReadLimit());
        Map<TopicPartition, Long> bounded = ((PartitionOffsets) end).positions();
        assertEquals(offsets("t", 0, 20L, "t", 1, 60L), bounded,
            "each partition gets its share of the 30 records, the new one counted from its earliest");
        assertEquals(List.of(List.of("t-0:0..20"), List.of("t-1:50..60")), plan(s, start.positions(), bounded),
            "the batch reads the new partition from its earliest too");
        s.stop();
    }

    /**
     * A batch that carries held heartbeats alone leaves the end watcher watching the other partitions:
     * it is not positioned again on each of them after the batch (ADR 0027 section 14). A data
     * record's batch still sends the watcher away.
     */
    @Test
    void aBatchOfHeldHeartbeatsAloneLeavesTheWatcherWatching() throws InterruptedException {
        TopicPartition hb = new TopicPartition("a.heartbeats", 0);
        TopicPartition data = new TopicPartition("t", 0);
        MockConsumer<byte[], byte[]> driver = source(offsets("t", 0, 0L, "a.heartbeats", 0, 0L),
            offsets("t", 0, 5L, "a.heartbeats", 0, 10L));
        java.util.concurrent.atomic.AtomicInteger seeks = new java.util.concurrent.atomic.AtomicInteger();
        MockConsumer<byte[], byte[]> watching = new MockConsumer<>(OffsetResetStrategy.NONE) {
            @Override
            public synchronized void seek(TopicPartition partition, long offset) {
                seeks.incrementAndGet();
                super.seek(partition, offset);
            }
        };
        watching.updateBeginningOffsets(offsets("t", 0, 0L));
        watching.updateEndOffsets(offsets("t", 0, 6L));
        GroupedMicroBatchStream stream = new GroupedMicroBatchStream(watched("60", "30000"), "unused", driver, watching);
        try {
            PartitionOffsets start = new PartitionOffsets(offsets("t", 0, 5L, "a.heartbeats", 0, 10L));
            ReadLimit all = ReadLimit.allAvailable();
            assertSame(start, stream.latestOffset(start, all), "nothing new");
            assertTrue(waitFor(() -> seeks.get() == 1), "the watcher watches the data partition, not the heartbeats");
            driver.updateEndOffsets(offsets("a.heartbeats", 0, 11L));
            PartitionOffsets end = start;
            long until = System.currentTimeMillis() + 2000;
            while (end == start && System.currentTimeMillis() < until) {
                end = (PartitionOffsets) stream.latestOffset(start, all);
            }
            assertEquals(offsets("t", 0, 5L, "a.heartbeats", 0, 11L), end.positions(), "the heartbeat carried after its wait");
            assertSame(end, stream.latestOffset(end, all), "nothing new after the heartbeats' batch");
            Thread.sleep(100);
            assertEquals(1, seeks.get(), "the watcher kept watching: not positioned again");
            driver.updateEndOffsets(offsets("t", 0, 6L));
            watching.schedulePollTask(() -> watching.addRecord(
                new org.apache.kafka.clients.consumer.ConsumerRecord<>("t", 0, 5L, new byte[0], new byte[0])));
            until = System.currentTimeMillis() + 2000;
            PartitionOffsets next = end;
            while (next == end && System.currentTimeMillis() < until) {
                next = (PartitionOffsets) stream.latestOffset(end, all);
            }
            assertEquals(6L, next.positions().get(data), "a data record's batch");
            assertSame(next, stream.latestOffset(next, all), "nothing new after it");
            assertTrue(waitFor(() -> seeks.get() == 2), "after a data batch the watcher is positioned at the new end");
        } finally {
            stream.stop();
        }
    }

    /**
     * While the watcher is quiet, a check asks the brokers for the held topics' ends only; every
     * partition's ends are asked every endCheckMs, so an end the watcher missed is still found.
     */
    @Test
    void aQuietCheckAsksTheHeldTopicsAloneAndAllOfThemEveryEndCheck() throws InterruptedException {
        TopicPartition hb = new TopicPartition("a.heartbeats", 0);
        TopicPartition data = new TopicPartition("t", 0);
        List<java.util.Set<TopicPartition>> asked = java.util.Collections.synchronizedList(new ArrayList<>());
        MockConsumer<byte[], byte[]> driver = new MockConsumer<>(OffsetResetStrategy.NONE) {
            @Override
            public synchronized Map<TopicPartition, Long> endOffsets(java.util.Collection<TopicPartition> partitions,
                                                                     java.time.Duration timeout) {
                asked.add(new java.util.HashSet<>(partitions));
                return super.endOffsets(partitions, timeout);
            }
        };
        driver.updateEndOffsets(offsets("t", 0, 5L, "a.heartbeats", 0, 10L));
        driver.updatePartitions("t", List.of(new PartitionInfo("t", 0, null, null, null)));
        driver.updatePartitions("a.heartbeats", List.of(new PartitionInfo("a.heartbeats", 0, null, null, null)));
        MockConsumer<byte[], byte[]> watching = new MockConsumer<>(OffsetResetStrategy.NONE);
        watching.updateBeginningOffsets(offsets("t", 0, 0L));
        GroupedMicroBatchStream stream = new GroupedMicroBatchStream(watched("60000", "400"), "unused", driver, watching);
        try {
            PartitionOffsets start = new PartitionOffsets(offsets("t", 0, 5L, "a.heartbeats", 0, 10L));
            ReadLimit all = ReadLimit.allAvailable();
            assertSame(start, stream.latestOffset(start, all), "nothing new");
            assertEquals(java.util.Set.of(hb, data), asked.get(0), "the first check asks every partition");
            driver.updateEndOffsets(offsets("t", 0, 6L));  // a record the watcher does not see
            for (int i = 0; i < 4; i++) {
                assertSame(start, stream.latestOffset(start, all), "quiet checks");
            }
            assertTrue(asked.size() >= 3, "each quiet check asked the brokers: " + asked.size());
            for (java.util.Set<TopicPartition> one : asked.subList(1, asked.size())) {
                assertEquals(java.util.Set.of(hb), one, "a quiet check asks the held topics only");
            }
            PartitionOffsets end = start;
            long until = System.currentTimeMillis() + 3000;
            while (end == start && System.currentTimeMillis() < until) {
                end = (PartitionOffsets) stream.latestOffset(start, all);
            }
            assertEquals(6L, end.positions().get(data), "found by the check of every partition, endCheckMs after the last");
            assertEquals(java.util.Set.of(hb, data), asked.get(asked.size() - 1), "that check asked every partition");
        } finally {
            stream.stop();
        }
    }

    /** Topic t and heartbeats held {@code holdMs}, checked every 20 ms while quiet, every partition every {@code endCheckMs}. */
    private static SourceSettings watched(String holdMs, String endCheckMs) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "t|a\\.heartbeats");
        options.put("groups", "1");
        options.put("idleCheckMs", "20");
        options.put("endCheckMs", endCheckMs);
        options.put("holdPattern", "(?:.*\\.)?heartbeats");
        options.put("holdMs", holdMs);
        return new SourceSettings(options);
    }

    private static boolean waitFor(java.util.function.BooleanSupplier done) throws InterruptedException {
        long until = System.currentTimeMillis() + 2000;
        while (!done.getAsBoolean() && System.currentTimeMillis() < until) {
            Thread.sleep(5);
        }
        return done.getAsBoolean();
    }

    @Test
    void nothingNewPlansNoTask() {
        Map<TopicPartition, Long> same = offsets("t", 0, 5L);
        assertEquals(0, stream(2).planInputPartitions(new PartitionOffsets(same), new PartitionOffsets(same)).length,
            "nothing to read, no task");
    }

    @Test
    void theOffsetSparkHandsBackIsParsedOnce() {
        GroupedMicroBatchStream s = stream(2);
        String json = new PartitionOffsets(offsets("t", 0, 5L, "u", 1, 7L)).json();
        Offset first = s.deserializeOffset(json);
        assertEquals(offsets("t", 0, 5L, "u", 1, 7L), ((PartitionOffsets) first).positions(), "parsed");
        assertSame(first, s.deserializeOffset(new String(json.toCharArray())), "the same JSON again: the same offset");
        assertEquals(offsets("t", 0, 6L, "u", 1, 7L),
            ((PartitionOffsets) s.deserializeOffset(new PartitionOffsets(offsets("t", 0, 6L, "u", 1, 7L)).json()))
                .positions(), "another JSON: parsed anew");
    }
    /** The first start is kept whole or not at all; an empty file (a write cut short) is resolved again. */
    @Test
    void theKeptFirstStartIsWrittenAsideAndAnEmptyOneIsResolvedAgain(@org.junit.jupiter.api.io.TempDir
            java.nio.file.Path tmp) throws Exception {
        org.apache.hadoop.fs.FileSystem fs = org.apache.hadoop.fs.FileSystem.getLocal(
            new org.apache.hadoop.conf.Configuration());
        org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(tmp.toUri());
        TopicPartition tp = new TopicPartition("t", 0);
        java.util.concurrent.atomic.AtomicInteger resolved = new java.util.concurrent.atomic.AtomicInteger();
        java.util.function.Supplier<PartitionOffsets> resolve = () -> {
            resolved.incrementAndGet();
            return new PartitionOffsets(Map.of(tp, 7L + resolved.get()));
        };
        assertEquals(Map.of(tp, 8L), GroupedMicroBatchStream.keptInitial(fs, dir, resolve).positions());
        assertEquals(Map.of(tp, 8L), GroupedMicroBatchStream.keptInitial(fs, dir, resolve).positions(),
            "kept: not resolved again (latest would have moved)");
        assertEquals(1, resolved.get());
        assertTrue(!fs.exists(new org.apache.hadoop.fs.Path(dir, "mirrorspark-initial-offsets.tmp")));

        java.nio.file.Files.write(tmp.resolve("mirrorspark-initial-offsets"), new byte[0]);  // cut short
        assertEquals(Map.of(tp, 9L), GroupedMicroBatchStream.keptInitial(fs, dir, resolve).positions(),
            "an empty file is resolved again, not a failure at every restart");
    }
}
