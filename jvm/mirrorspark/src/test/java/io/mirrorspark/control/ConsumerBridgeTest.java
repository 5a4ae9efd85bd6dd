package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConsumerBridgeTest {
    private static ConsumerBridge unconnected() {
        // Nothing listens on port 1: assigning and pausing ask no broker.
        return new ConsumerBridge(Map.of("bootstrap.servers", "127.0.0.1:1", "client.id", "bridge-test"));
    }

    @Test
    void aPartitionNotAssignedCannotBePausedAndTheErrorSaysWhich() {
        try (ConsumerBridge consumer = unconnected()) {
            ClientError error = assertThrows(ClientError.class, () -> consumer.pause("[[\"lease\", 0]]"));
            assertTrue(error.getMessage().startsWith("pausing [lease-0]"), error.getMessage());
        }
    }

    @Test
    void anAssignedPartitionIsPausedAndItsPollReturnsNothing() {
        try (ConsumerBridge consumer = unconnected()) {
            consumer.assign("[[\"lease\", 0, 0]]");
            consumer.pause("[[\"lease\", 0]]");
            // Paused, the poll sends no fetch and returns no record; RecordCodec's form of none.
            byte[] none = consumer.poll(10, 50);
            assertArrayEquals(RecordCodec.encode(List.of()), none, "records from a paused partition");
        }
    }
}
