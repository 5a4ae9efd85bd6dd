package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProducerBridgeTest {
    @Test
    void aRecordNoBrokerTakesFailsThroughItsOutcomeAndFlushReturns() throws Exception {
        // Nothing listens on port 1: the send waits for metadata max.block.ms, then fails through its
        // callback, as librdkafka reports a record it could not deliver; flush then has nothing left.
        try (ProducerBridge producer = new ProducerBridge(Map.of("bootstrap.servers", "127.0.0.1:1",
                "max.block.ms", "300", "client.id", "bridge-test"))) {
            producer.send(7, "t", 0, null, new byte[] {1}, RecordCodecTest.packedHeaders(), -1);
            assertEquals(0, producer.flush(10_000));
            JsonNode rows = AdminBridge.parse(producer.outcomes(), "outcomes");
            assertEquals(1, rows.size());
            JsonNode row = rows.get(0);
            assertEquals(7, row.get(0).asLong());
            assertEquals(ClientError.TIMED_OUT, row.get(1).asInt());
            assertTrue(row.get(2).asBoolean(), row.toString());  // retriable
            assertTrue(row.get(3).asText().startsWith("sending to t: "), row.toString());
            assertEquals("[]", producer.outcomes());  // each outcome is collected once
        }
    }

    @Test
    void manySendsInOneCallWaitForATopicsMetadataOnce() throws Exception {
        // Two sends packed as Python packs them, to a topic whose metadata never comes: the first waits
        // max.block.ms, the second fails at once with the same error; both through their outcomes.
        try (ProducerBridge producer = new ProducerBridge(Map.of("bootstrap.servers", "127.0.0.1:1",
                "max.block.ms", "1000", "client.id", "bridge-test"))) {
            String second = RecordCodecTest.ONE_SEND.substring(8).replace("0000000000000007", "0000000000000008");
            long started = System.nanoTime();
            producer.sendAll(java.util.HexFormat.of().parseHex("00000002" + RecordCodecTest.ONE_SEND.substring(8) + second));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            assertTrue(tookMs < 1900, "waited " + tookMs + " ms: the second send waited again");
            JsonNode rows = AdminBridge.parse(producer.outcomes(), "outcomes");
            assertEquals(2, rows.size());
            for (int i = 0; i < 2; i++) {
                assertEquals(7 + i, rows.get(i).get(0).asLong());
                assertEquals(ClientError.TIMED_OUT, rows.get(i).get(1).asInt());
            }
        }
    }

    @Test
    void sendAndFlushAnswersWhatIsLeftAndEachOutcomeInOneCall() throws Exception {
        // One packed send to a broker that is not there: the call sends it, waits for its answer and
        // returns [left, outcomes]; an empty packet only flushes and collects.
        try (ProducerBridge producer = new ProducerBridge(Map.of("bootstrap.servers", "127.0.0.1:1",
                "max.block.ms", "300", "client.id", "bridge-test"))) {
            JsonNode answer = AdminBridge.parse(producer.sendAndFlush(
                java.util.HexFormat.of().parseHex(RecordCodecTest.ONE_SEND), 10_000), "answer");
            assertEquals(0, answer.get(0).asLong());
            assertEquals(1, answer.get(1).size());
            assertEquals(7, answer.get(1).get(0).get(0).asLong());
            assertEquals(ClientError.TIMED_OUT, answer.get(1).get(0).get(1).asInt());
            JsonNode again = AdminBridge.parse(producer.sendAndFlush(java.util.HexFormat.of().parseHex("00000000"), 1_000),
                "answer");
            assertEquals("[0,[]]", again.toString());
        }
    }
}
