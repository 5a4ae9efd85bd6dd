package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Real-time mode's heartbeat hold, on a mock consumer: held records wait, none is skipped. */
final class HeldPausesTest {
    private static final TopicPartition BEAT = new TopicPartition("heartbeats", 0);
    private static final TopicPartition DATA = new TopicPartition("t", 0);

    private static GroupReader reader(MockConsumer<byte[], byte[]> consumer, long holdMs) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "t|heartbeats");
        options.put("holdPattern", "heartbeats");
        options.put("holdMs", String.valueOf(holdMs));
        consumer.updateBeginningOffsets(Map.of(BEAT, 0L, DATA, 0L));
        consumer.updateEndOffsets(Map.of(BEAT, 0L, DATA, 0L));
        consumer.updatePartitions("t", List.of(new PartitionInfo("t", 0, null, null, null)));
        consumer.updatePartitions("heartbeats", List.of(new PartitionInfo("heartbeats", 0, null, null, null)));
        return new GroupReader(new SourceSettings(options), List.of(new OffsetRange("heartbeats", 0, 0, Long.MAX_VALUE),
            new OffsetRange("t", 0, 0, Long.MAX_VALUE)), consumer, true);
    }

    private static void beat(MockConsumer<byte[], byte[]> consumer, String topic, long offset) {
        consumer.addRecord(new ConsumerRecord<>(topic, 0, offset, new byte[0], new byte[0]));
    }

    private static String next(GroupReader reader, long timeoutMs) {
        if (!reader.nextWithTimeout(System.currentTimeMillis(), timeoutMs).hasRecord()) {
            return null;
        }
        return reader.get().getUTF8String(2) + "@" + reader.get().getLong(4);
    }

    @Test
    void heartbeatsAloneWaitTheHoldAndAnyOtherRecordBringsThemAtOnce() {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        GroupReader reader = reader(consumer, 60_000L);
        beat(consumer, "heartbeats", 0);
        assertEquals("heartbeats@0", next(reader, 1_000L), "the first heartbeat is forwarded at once");
        beat(consumer, "heartbeats", 1);
        assertEquals(null, next(reader, 300L), "the next one waits: its partition is paused");
        assertTrue(consumer.paused().contains(BEAT));
        assertEquals(Map.of(BEAT, 1L, DATA, 0L), ((GroupOffset) reader.getOffset()).next,
            "a held partition stands at the first heartbeat not forwarded");

        beat(consumer, "t", 0);
        List<String> read = new ArrayList<>();
        for (String r; (r = next(reader, 300L)) != null; ) {
            read.add(r);
        }
        assertEquals(List.of("t@0", "heartbeats@1"), read, "another record resumes the held ones");
        assertEquals(Map.of(BEAT, 2L, DATA, 1L), ((GroupOffset) reader.getOffset()).next);
        reader.close();
    }

    @Test
    void aHoldEndsAfterHoldMsAndAGivenUpPartitionIsNotResumed() {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        GroupReader reader = reader(consumer, 300L);
        beat(consumer, "heartbeats", 0);
        long paused = System.currentTimeMillis();
        assertEquals("heartbeats@0", next(reader, 1_000L));
        beat(consumer, "heartbeats", 1);
        beat(consumer, "heartbeats", 2);
        assertEquals("heartbeats@1", next(reader, 5_000L), "fetched again when the hold is over");
        assertTrue(System.currentTimeMillis() - paused >= 300L, "not before holdMs");
        assertEquals("heartbeats@2", next(reader, 1_000L), "the held ones come together");
        assertEquals(Set.of(BEAT), consumer.paused(), "and pause again");
        reader.close();
    }
}
