package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class AdminBridgeTest {
    private static final Map<String, String> NOWHERE = Map.of("bootstrap.servers", "127.0.0.1:9",
        "request.timeout.ms", "1000", "default.api.timeout.ms", "1500", "reconnect.backoff.max.ms", "200");

    @Test
    void deletingNoGroupAsksNothingAndAMalformedListIsRefused() {
        try (AdminBridge bridge = new AdminBridge(NOWHERE)) {
            assertEquals("{}", bridge.deleteGroups("[]", 1000));
            IllegalArgumentException notArray = assertThrows(IllegalArgumentException.class,
                () -> bridge.deleteGroups("{\"g\":1}", 1000));
            assertTrue(notArray.getMessage().startsWith("groups must be a JSON array"), notArray.getMessage());
        }
    }

    @Test
    void aGroupTheClusterCannotDeleteComesBackAsItsError() {
        try (AdminBridge bridge = new AdminBridge(NOWHERE)) {
            String answer = bridge.deleteGroups("[\"g\"]", 1000);
            assertTrue(answer.startsWith("{\"g\":{\"error\":["), answer);
        }
    }

    @Test
    void eachPartitionAskedTwiceOrOfASharedHashGetsItsOwnAnswer() {
        assertEquals(new TopicPartition("t-0011", 3).hashCode(), new TopicPartition("t-0021", 2).hashCode(),
            "two partitions of one hash: asked in two parts");
        try (AdminBridge bridge = new AdminBridge(NOWHERE)) {
            String answer = bridge.listOffsets("[[\"t-0011\", 3, -1], [\"t-0021\", 2, -1], [\"t-0011\", 3, -2]]", false, 1000);
            var parsed = AdminBridge.parse(answer, "answer");
            assertEquals(2, parsed.size(), answer);
            assertTrue(parsed.get("t-0011:3").has("error"), answer);
            assertTrue(parsed.get("t-0021:2").has("error"), answer);
        }
    }
}
