package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class GroupAdminTest {
    @Test
    void offsetsCrossAsSortedRowsAndComeBackTheSame() {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        offsets.put(new TopicPartition("b", 0), new OffsetAndMetadata(7, ""));
        offsets.put(new TopicPartition("a", 1), new OffsetAndMetadata(42, "meta \"quoted\""));
        offsets.put(new TopicPartition("a", 0), new OffsetAndMetadata(3, null));
        offsets.put(new TopicPartition("c", 0), null);  // a partition without a committed offset
        String text = GroupAdmin.encode(offsets);
        assertEquals("[[\"a\",0,3,\"\"],[\"a\",1,42,\"meta \\\"quoted\\\"\"],[\"b\",0,7,\"\"]]", text);
        Map<TopicPartition, OffsetAndMetadata> back = GroupAdmin.decode(text);
        assertEquals(3, back.size());
        assertEquals(42, back.get(new TopicPartition("a", 1)).offset());
        assertEquals("meta \"quoted\"", back.get(new TopicPartition("a", 1)).metadata());
    }

    @Test
    void malformedOffsetsAreRefusedNamingTheRow() {
        IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
            () -> GroupAdmin.decode("[[\"a\",0"));
        assertTrue(notJson.getMessage().startsWith("offsets are not JSON"), notJson.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
            () -> GroupAdmin.decode("[[\"a\",0,-1,\"\"]]"));
        assertTrue(negative.getMessage().contains("[\"a\",0,-1,\"\"]"), negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GroupAdmin.decode("{\"a\":1}"));
    }

    @Test
    void aClusterThatDoesNotAnswerIsNotAnsweringNotAnAbort() {
        Map<String, String> settings = Map.of("bootstrap.servers", "127.0.0.1:9",
            "request.timeout.ms", "1000", "default.api.timeout.ms", "1500", "reconnect.backoff.max.ms", "200");
        try (GroupAdmin groups = new GroupAdmin(settings)) {
            GroupAdmin.NotAnswering listing = assertThrows(GroupAdmin.NotAnswering.class, () -> groups.groupIds(1500));
            assertTrue(listing.getMessage().startsWith("listing consumer groups: "), listing.getMessage());
            GroupAdmin.NotAnswering offsets = assertThrows(GroupAdmin.NotAnswering.class,
                () -> groups.committed("g", 1500));
            assertTrue(offsets.getMessage().startsWith("reading the offsets of group g: "), offsets.getMessage());
            assertThrows(GroupAdmin.NotAnswering.class, () -> groups.describe("g", 1500));
            assertThrows(GroupAdmin.NotAnswering.class, () -> groups.describeAll("[\"g\",\"h\"]", 1500));
            assertEquals("{}", groups.describeAll("[]", 1500), "no groups: no request");
            assertThrows(IllegalArgumentException.class, () -> groups.describeAll("{\"g\":1}", 1500));
            assertThrows(GroupAdmin.NotAnswering.class, () -> groups.commit("g", "[[\"a\",0,1,\"\"]]", 1500));
            GroupAdmin.NotAnswering stable = assertThrows(GroupAdmin.NotAnswering.class,
                () -> groups.committedStable("g", "[[\"a\",0]]", 1500));
            assertTrue(stable.getMessage().startsWith("reading the stable offsets of group g: "), stable.getMessage());
            assertEquals("{\"offsets\":[],\"open\":[]}", groups.committedStable("g", "[]", 1500),
                "no partitions: no request");
            assertThrows(IllegalArgumentException.class, () -> groups.committedStable("g", "[[\"a\"]]", 1500));
            GroupAdmin.NotAnswering fence = assertThrows(GroupAdmin.NotAnswering.class,
                () -> groups.fence("[\"p-a-0\"]", 1500));
            assertTrue(fence.getMessage().startsWith("fencing transactional id p-a-0: "), fence.getMessage());
            assertThrows(IllegalArgumentException.class, () -> groups.fence("{}", 1500));
        }
    }
}
