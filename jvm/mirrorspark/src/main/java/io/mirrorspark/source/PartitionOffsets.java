package io.mirrorspark.source;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * The next offset to read of every partition, written to Spark's offset log in the same JSON as
 * Spark's own Kafka source ({@code {"topic":{"0":12,"1":40}}}), so checkpoints of either source
 * resume with the other and mirrorspark's readers of the log need no change.
 */
public final class PartitionOffsets extends Offset {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<TopicPartition, Long> positions;
    private volatile String json;

    /** Takes {@code positions} as it is: callers hand over a map they no longer change. */
    public PartitionOffsets(Map<TopicPartition, Long> positions) {
        this.positions = positions;
    }

    /**
     * Spark asks whether the latest offsets equal the last batch's on every poll of an idle query
     * (10 a second), with two different objects of equal content. Each renders its JSON once (Spark
     * logs it in every trigger's progress anyway), so this is one string comparison, not thousands
     * of map lookups; the rendering is canonical (sorted), so equal positions give equal JSON.
     */
    @Override
    public boolean equals(Object other) {
        if (other == this) {
            return true;
        }
        if (other instanceof PartitionOffsets) {
            return json().equals(((PartitionOffsets) other).json());
        }
        return super.equals(other);
    }

    @Override
    public int hashCode() {
        return json().hashCode();  // Offset's contract: equal JSON, equal hash, whatever the class
    }

    public Map<TopicPartition, Long> positions() {
        return positions;
    }

    /** Parses the JSON above; -2 and -1 (earliest, latest) are left for the caller to resolve. */
    public static PartitionOffsets parse(String json) {
        Map<TopicPartition, Long> out = new java.util.HashMap<>();
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("not a partition offsets JSON: " + json, e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not a partition offsets JSON object: " + json);
        }
        for (Iterator<Map.Entry<String, JsonNode>> topics = root.properties().iterator(); topics.hasNext(); ) {
            Map.Entry<String, JsonNode> topic = topics.next();
            for (Iterator<Map.Entry<String, JsonNode>> parts = topic.getValue().properties().iterator(); parts.hasNext(); ) {
                Map.Entry<String, JsonNode> p = parts.next();
                out.put(new TopicPartition(topic.getKey(), Integer.parseInt(p.getKey())), p.getValue().asLong());
            }
        }
        return new PartitionOffsets(out);
    }

    @Override
    public String json() {
        String rendered = json;
        if (rendered == null) {
            rendered = render();
            json = rendered;
        }
        return rendered;
    }

    private String render() {
        Map<String, Map<Integer, Long>> sorted = new TreeMap<>();
        for (Map.Entry<TopicPartition, Long> e : positions.entrySet()) {
            sorted.computeIfAbsent(e.getKey().topic(), t -> new TreeMap<>()).put(e.getKey().partition(), e.getValue());
        }
        StringBuilder out = new StringBuilder("{");
        boolean firstTopic = true;
        for (Map.Entry<String, Map<Integer, Long>> topic : sorted.entrySet()) {
            if (!firstTopic) {
                out.append(',');
            }
            firstTopic = false;
            out.append(quote(topic.getKey())).append(":{");
            boolean firstPart = true;
            for (Map.Entry<Integer, Long> p : topic.getValue().entrySet()) {
                if (!firstPart) {
                    out.append(',');
                }
                firstPart = false;
                out.append('"').append(p.getKey()).append("\":").append(p.getValue());
            }
            out.append('}');
        }
        return out.append('}').toString();
    }

    private static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
