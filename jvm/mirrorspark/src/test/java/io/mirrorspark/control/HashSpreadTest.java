package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class HashSpreadTest {
    @Test
    void numberedTopicsSplitIntoPartsOfDistinctHashesKeepingEveryKeyInOrder() {
        Map<TopicPartition, Integer> asked = new LinkedHashMap<>();
        for (int t = 0; t < 300; t++) {
            for (int p = 0; p < 10; p++) {
                asked.put(new TopicPartition(String.format("orders-%04d", t), p), asked.size());
            }
        }
        Map<Integer, Integer> runs = new java.util.HashMap<>();
        asked.keySet().forEach(tp -> runs.merge(tp.hashCode(), 1, Integer::sum));
        int longest = runs.values().stream().max(Integer::compare).orElseThrow();
        assertTrue(longest > 1, "the names chosen share hash codes");

        List<Map<TopicPartition, Integer>> parts = HashSpread.split(asked);

        assertEquals(longest, parts.size());
        List<TopicPartition> all = new ArrayList<>();
        for (Map<TopicPartition, Integer> part : parts) {
            Set<Integer> hashes = new HashSet<>();
            part.keySet().forEach(tp -> assertTrue(hashes.add(tp.hashCode()), "two keys of one hash in a part: " + tp));
            List<Integer> order = new ArrayList<>(part.values());
            List<Integer> sorted = new ArrayList<>(order);
            sorted.sort(Integer::compare);
            assertEquals(sorted, order, "a part keeps the keys' order");
            part.forEach((tp, at) -> assertEquals(asked.get(tp), at));
            all.addAll(part.keySet());
        }
        assertEquals(asked.size(), all.size());
        assertEquals(asked.keySet(), new HashSet<>(all));
    }

    @Test
    void keysOfDistinctHashesStayOneRequest() {
        Map<TopicPartition, Integer> asked = new LinkedHashMap<>();
        asked.put(new TopicPartition("a", 0), 0);
        asked.put(new TopicPartition("b", 0), 1);
        asked.put(new TopicPartition("c", 0), 2);
        assertEquals(List.of(asked), HashSpread.split(asked));
        assertEquals(List.of(), HashSpread.split(Map.of()));
    }
}
