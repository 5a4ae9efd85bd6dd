package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** A task's reading of its group of partitions, on a mock consumer: no broker, no Spark. */
final class GroupReaderTest {
    private static final TopicPartition T0 = new TopicPartition("t", 0);

    private static Map<String, String> options(String pattern) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", pattern);
        return options;
    }

    /** What a task planned for offsets 2-9 reads when retention removed 2-4 first, or the error it fails with. */
    private static final class Removed {
        final List<Long> read = new ArrayList<>();
        String error;

        Removed(boolean fail) {
            Map<String, String> options = options("t");
            options.put("failOnDataLoss", String.valueOf(fail));
            MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
            consumer.updateBeginningOffsets(Map.of(T0, 5L));
            consumer.updateEndOffsets(Map.of(T0, 10L));
            GroupReader reader = new GroupReader(new SourceSettings(options), List.of(new OffsetRange("t", 0, 2, 10)),
                consumer);
            for (long offset = 5; offset < 10; offset++) {
                consumer.addRecord(new ConsumerRecord<>("t", 0, offset, new byte[0], new byte[] {(byte) offset}));
            }
            try {
                while (reader.next()) {
                    read.add(reader.get().getLong(4));
                }
            } catch (GroupReader.DataLossException e) {
                error = e.getMessage();
            }
            reader.close();
        }
    }

    @Test
    void removedRecordsAreSkipped() {
        Removed r = new Removed(false);
        assertNull(r.error, "skipped to the earliest: " + r.read);
        assertEquals(List.of(5L, 6L, 7L, 8L, 9L), r.read, "skipped to the earliest");
    }

    @Test
    void removedRecordsFailTheTaskWithDataLossFail() {
        Removed r = new Removed(true);
        assertTrue(r.read.isEmpty(), "data.loss = fail: the task fails: " + r.error);
        assertNotNull(r.error, "data.loss = fail: the task fails");
        assertTrue(r.error.contains("t-0: offsets 2 to 4 were removed") && r.error.contains("mirrorspark.data.loss = fail"),
            "data.loss = fail: the task fails: " + r.error);
    }

    /**
     * A partition whose records 2-9 are due and never come (its broker down) fails the task, nothing
     * skipped; one whose topic the source no longer lists (deleted) is given up, the others read.
     */
    private static final class Stalled {
        String error;
        boolean more = true;
        final long tookMs;

        Stalled(boolean deleted) {
            Map<String, String> options = options("t");
            options.put("pollTimeoutMs", "500");
            MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
            consumer.updateBeginningOffsets(Map.of(T0, 0L));
            consumer.updateEndOffsets(Map.of(T0, 10L));
            if (!deleted) {
                consumer.updatePartitions("t", List.of(new PartitionInfo("t", 0, null, new Node[0], new Node[0])));
            }
            GroupReader reader = new GroupReader(new SourceSettings(options), List.of(new OffsetRange("t", 0, 2, 10)),
                consumer);
            long started = System.currentTimeMillis();
            try {
                more = reader.next();
            } catch (GroupReader.SourceStalledException e) {
                error = e.getMessage();
            }
            tookMs = System.currentTimeMillis() - started;
            reader.close();
        }
    }

    @Test
    void stalledRecordsFailTheTask() {
        Stalled s = new Stalled(false);
        String what = "due records that do not come fail the task, nothing skipped: " + s.error + ", more " + s.more;
        assertNotNull(s.error, what);
        assertTrue(s.error.contains("t-0 at 2 (batch end 10)") && s.error.contains("nothing skipped"), what);
        assertTrue(s.tookMs >= 500, "not before pollTimeoutMs");
    }

    @Test
    void onlyADeletedTopicIsGivenUp() {
        Stalled s = new Stalled(true);
        assertNull(s.error, "a deleted topic's range is given up");
        assertFalse(s.more, "a deleted topic's range is given up");
    }

    /** Each partition's records stop at its own end, whichever partition the records before came from. */
    @Test
    void eachPartitionEndsAtItsOwnEnd() {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        GroupReader reader = new GroupReader(new SourceSettings(options("a|b")), List.of(new OffsetRange("a", 0, 0, 3),
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
        assertEquals(7, rows, "every partition up to its own end, once: " + read);
        assertEquals(Set.of("a-0@0", "a-0@1", "a-0@2", "a-1@0", "a-1@1", "b-0@5", "b-0@6"), read,
            "every partition up to its own end, once");
    }
}
