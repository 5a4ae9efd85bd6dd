package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The source's offsets as Spark's JSON, without brokers or Spark. */
final class PartitionOffsetsTest {

    @Test
    void offsetsJsonRoundTrip() {
        Map<TopicPartition, Long> positions = new HashMap<>();
        positions.put(new TopicPartition("a.b", 10), 7L);
        positions.put(new TopicPartition("a.b", 2), 0L);
        positions.put(new TopicPartition("q\"uote", 0), 123456789012L);
        String json = new PartitionOffsets(positions).json();
        assertEquals("{\"a.b\":{\"2\":0,\"10\":7},\"q\\\"uote\":{\"0\":123456789012}}", json, "Spark's JSON, sorted");
        assertEquals(positions, PartitionOffsets.parse(json).positions(), "parses back");
        assertEquals(-1L, PartitionOffsets.parse("{\"t\":{\"0\":-2,\"1\":-1}}").positions().get(new TopicPartition("t", 1)),
            "earliest/latest markers kept for the caller");
    }

    @Test
    void aNonObjectIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> PartitionOffsets.parse("[1]"), "a non-object is refused");
    }
}
