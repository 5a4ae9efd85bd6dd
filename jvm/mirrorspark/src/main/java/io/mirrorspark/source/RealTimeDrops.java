package io.mirrorspark.source;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.TopicPartition;

/**
 * Partitions real-time tasks gave up because their end went behind the position read (the topic
 * re-created, or truncated), per flow, on the driver. A task cannot tell which: the topic's id is
 * known to mirrorspark's driver, which takes these after each batch is recorded and either restarts
 * the flow reading the new topic from its start or reports the truncation. Until then the partition
 * stays where it stopped, so no record of a new topic is read as if it were the old one's.
 */
public final class RealTimeDrops {
    private static final Map<String, Map<TopicPartition, Long>> GIVEN_UP = new ConcurrentHashMap<>();

    private RealTimeDrops() {
    }

    static void add(String flow, Map<TopicPartition, Long> positions) {
        GIVEN_UP.compute(flow, (name, known) -> {
            Map<TopicPartition, Long> all = known == null ? new HashMap<>() : known;
            all.putAll(positions);
            return all;
        });
    }

    /** What the flow's batches gave up since the last call, as {@code topic<TAB>partition<TAB>position} lines. */
    public static String take(String flow) {
        Map<TopicPartition, Long> taken = GIVEN_UP.remove(flow);
        if (taken == null) {
            return "";
        }
        StringBuilder out = new StringBuilder();
        Map<String, Long> sorted = new TreeMap<>();
        for (Map.Entry<TopicPartition, Long> e : taken.entrySet()) {
            sorted.put(e.getKey().topic() + "\t" + e.getKey().partition(), e.getValue());
        }
        for (Map.Entry<String, Long> e : sorted.entrySet()) {
            out.append(e.getKey()).append('\t').append(e.getValue()).append('\n');
        }
        return out.toString();
    }
}
