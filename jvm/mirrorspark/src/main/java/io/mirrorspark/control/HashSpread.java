package io.mirrorspark.control;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Splits a request keyed by {@code TopicPartition} into parts whose keys' hash codes all differ.
 *
 * <p>Why: a {@code TopicPartition}'s hash adds its partition to its topic's hash, so numbered topics
 * ({@code orders-0011} partition 3 and {@code orders-0021} partition 2, ...) share hash codes in runs.
 * Kafka's Admin keeps a call's futures in immutable maps and sets ({@code Map.ofEntries},
 * {@code Set.copyOf}), which probe linearly: with runs of equal hashes, building and reading them
 * costs the square of the partitions asked (ADR 0027, section 15). The n-th key of a hash goes to part n,
 * so there are as many parts as the largest run, and the order of the keys is kept in each part.
 */
final class HashSpread {
    private HashSpread() {
    }

    static <K, V> List<Map<K, V>> split(Map<K, V> keyed) {
        List<Map<K, V>> parts = new ArrayList<>();
        Map<Integer, Integer> seen = new HashMap<>();
        for (Map.Entry<K, V> entry : keyed.entrySet()) {
            int part = seen.merge(entry.getKey().hashCode(), 1, Integer::sum) - 1;
            if (part == parts.size()) {
                parts.add(new LinkedHashMap<>());
            }
            parts.get(part).put(entry.getKey(), entry.getValue());
        }
        return parts;
    }
}
