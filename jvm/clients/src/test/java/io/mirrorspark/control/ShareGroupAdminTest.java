package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class ShareGroupAdminTest {
    private static final Map<String, String> NOWHERE = Map.of("bootstrap.servers", "127.0.0.1:9",
        "request.timeout.ms", "1000", "default.api.timeout.ms", "1500", "reconnect.backoff.max.ms", "200");

    @Test
    void offsetsAreLongsWhateverTheirSize() {
        Map<TopicPartition, Long> parsed = ShareGroupAdmin.offsets("[[\"t\", 0, 7], [\"t\", 1, 5000000000]]");
        assertEquals(Long.valueOf(7), parsed.get(new TopicPartition("t", 0)));
        assertEquals(Long.valueOf(5_000_000_000L), parsed.get(new TopicPartition("t", 1)));
    }

    @Test
    void aMalformedOffsetRowIsRefusedNamingIt() {
        for (String bad : new String[] {"[[\"t\", 0]]", "[[\"t\", 0, -1]]", "[[1, 0, 3]]", "[[\"t\", \"x\", 3]]"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ShareGroupAdmin.offsets(bad));
            assertTrue(e.getMessage().startsWith("offsets: ["), e.getMessage());
        }
        IllegalArgumentException notArray = assertThrows(IllegalArgumentException.class,
            () -> ShareGroupAdmin.offsets("{}"));
        assertTrue(notArray.getMessage().startsWith("offsets must be a JSON array"), notArray.getMessage());
    }

    @Test
    void askingAboutNoGroupAsksNothingAndAnUnreachableClusterAnswersEachGroupWithItsError() {
        try (AdminBridge bridge = new AdminBridge(NOWHERE)) {
            ShareGroupAdmin groups = new ShareGroupAdmin(bridge);
            assertEquals("{}", groups.describe("[]", 1000));
            assertEquals("{}", groups.delete("[]", 1000));
            String answer = groups.describe("[\"g\"]", 1000);
            assertTrue(answer.startsWith("{\"g\":{\"error\":[-185,"), answer);
            ClientError listing = assertThrows(ClientError.class, () -> groups.list(1000));
            assertTrue(listing.getMessage().startsWith("listing share groups: "), listing.getMessage());
        }
    }
}
