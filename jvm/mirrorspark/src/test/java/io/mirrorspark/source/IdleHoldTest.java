package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Heartbeats alone wait up to holdMs; any other record, a new or vanished partition, or the wait's end releases them. */
final class IdleHoldTest {
    private final TopicPartition hb = new TopicPartition("a.heartbeats", 0);
    private final TopicPartition data = new TopicPartition("orders", 0);
    private final Map<TopicPartition, Long> start = Map.of(hb, 10L, data, 7L);

    @Test
    void heartbeatsAloneAreHeldThenCarried() {
        IdleHold hold = new IdleHold("(?:.*\\.)?heartbeats", 5000);
        assertEquals(start, hold.apply(start, Map.of(hb, 11L, data, 7L), 1000), "a heartbeat alone is held");
        assertFalse(hold.due(5999), "due when the wait ends, not before");
        assertTrue(hold.due(6000), "due when the wait ends");
        assertEquals(Map.of(data, 7L), hold.unheld(Map.of(hb, 11L, data, 7L)), "the watched ends leave heartbeats out");
        assertEquals(start, hold.apply(start, Map.of(hb, 14L, data, 7L), 5999), "still held before the wait ends");
        assertEquals(15L, hold.apply(start, Map.of(hb, 15L, data, 7L), 6000).get(hb), "released when the wait ends");
        assertEquals(start, hold.apply(start, Map.of(hb, 16L, data, 7L), 6001), "a new wait starts after the release");
        Map<TopicPartition, Long> both = Map.of(hb, 16L, data, 8L);
        assertEquals(both, hold.apply(start, both, 6002), "a real record takes the heartbeats with it at once");
        assertEquals(start, hold.apply(start, Map.of(hb, 17L, data, 7L), 6003), "held again, a fresh wait");
        assertEquals(start, hold.apply(start, Map.of(hb, 17L, data, 7L), 11002), "the fresh wait began at 6003");
        TopicPartition added = new TopicPartition("new", 0);
        Map<TopicPartition, Long> grown = Map.of(hb, 17L, data, 7L, added, 0L);
        assertEquals(grown, hold.apply(start, grown, 11003), "a new partition is planned at once");
        assertEquals(17L, hold.apply(start, Map.of(hb, 17L), 11004).get(hb), "a vanished partition is planned at once");
        TopicPartition newHb = new TopicPartition("b.heartbeats", 0);
        assertEquals(start, hold.apply(start, Map.of(hb, 10L, data, 7L, newHb, 3L), 20000),
            "a new heartbeats partition waits too");
    }

    @Test
    void nothingIsHeldWithoutAWaitOrAPattern() {
        assertEquals(11L, new IdleHold("(?:.*\\.)?heartbeats", 0).apply(start, Map.of(hb, 11L, data, 7L), 1).get(hb),
            "holdMs 0: nothing held");
        assertEquals(11L, new IdleHold("", 5000).apply(start, Map.of(hb, 11L, data, 7L), 1).get(hb),
            "no pattern: nothing held");
    }
}
