package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

class RecordCodecTest {
    /** The layout Python's decode_records reads (tests/unit/control/test_java_clients.py holds the same bytes). */
    static final String ONE_RECORD = "00000001" + "00000001" + "74" + "00000002" + "0000000000000005" + "01"
        + "000000000000007b" + "ffffffff" + "00000002" + "7631" + "00000001" + "00000001" + "68" + "ffffffff"
        + "00000000";

    /** One send as Python's encode_send packs it (tests/unit/control/test_java_clients.py holds the same bytes):
     *  id 7 to t[2], no key, value "v", no headers, no timestamp. */
    static final String ONE_SEND = "00000001" + "0000000000000007" + "00000001" + "74" + "00000002" + "ffffffff"
        + "00000001" + "76" + "ffffffff" + "ffffffffffffffff";

    @Test
    void sendsPackedByPythonAreRead() {
        List<RecordCodec.Send> sends = RecordCodec.sends(HexFormat.of().parseHex(ONE_SEND));
        assertEquals(1, sends.size());
        RecordCodec.Send one = sends.get(0);
        assertEquals(7L, one.id());
        assertEquals("t", one.topic());
        assertEquals(2, one.partition());
        assertNull(one.key());
        assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), one.value());
        assertNull(one.headers());
        assertEquals(-1L, one.timestamp());
        assertThrows(IllegalArgumentException.class, () -> RecordCodec.sends(HexFormat.of().parseHex("00000002")));
    }

    @Test
    void aBatchHasTheLayoutPythonReads() {
        RecordHeaders headers = new RecordHeaders();
        headers.add("h", null);
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>("t", 2, 5, 123, TimestampType.CREATE_TIME, -1, 2,
            null, "v1".getBytes(StandardCharsets.UTF_8), headers, Optional.empty());
        assertEquals(ONE_RECORD, HexFormat.of().formatHex(RecordCodec.encode(List.of(record))));
        assertEquals("0000000000000000", HexFormat.of().formatHex(RecordCodec.encode(List.of())));
        // a partition read to its end: topic, partition, position
        assertEquals("00000000" + "00000001" + "00000001" + "74" + "00000003" + "0000000000000009",
            HexFormat.of().formatHex(RecordCodec.encode(List.of(), List.of(Map.entry(new TopicPartition("t", 3), 9L)))));
    }

    /** One header, {@code seq} = {1, 2}, packed as Python's encode_headers packs it. */
    static byte[] packedHeaders() {
        return ByteBuffer.allocate(4 + 4 + 3 + 4 + 2).putInt(1).putInt(3).put("seq".getBytes(StandardCharsets.UTF_8))
            .putInt(2).put(new byte[] {1, 2}).array();
    }

    @Test
    void headersPythonPackedComeBackWithNullValues() {
        ByteBuffer packed = ByteBuffer.allocate(4 + 4 + 3 + 4 + 2 + 4 + 1 + 4);
        packed.putInt(2).putInt(3).put("seq".getBytes(StandardCharsets.UTF_8)).putInt(2).put(new byte[] {1, 2})
            .putInt(1).put((byte) 'x').putInt(-1);
        RecordHeaders headers = RecordCodec.headers(packed.array());
        assertArrayEquals(new byte[] {1, 2}, headers.lastHeader("seq").value());
        assertNull(headers.lastHeader("x").value());
        assertEquals(0, RecordCodec.headers(null).toArray().length);
        assertThrows(IllegalArgumentException.class, () -> RecordCodec.headers(new byte[] {0, 0, 0, 1, 0}));
    }
}
