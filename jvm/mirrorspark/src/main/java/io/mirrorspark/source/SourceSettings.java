package io.mirrorspark.source;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.TopicPartition;

/**
 * The source's options, resolved once on the driver and shipped to executors with each task:
 * {@code kafka.*} (the consumer's settings), {@code subscribePattern} (Java regex, whole topic
 * names), {@code startingOffsets} (earliest, latest or partition JSON with -2/-1),
 * {@code maxOffsetsPerTrigger} (0: no bound), {@code groups} (tasks per batch),
 * {@code pollTimeoutMs} (how long a task waits for a partition that stops answering),
 * {@code idleCheckMs} (while an {@link EndWatcher} sees nothing new, the brokers are asked for the
 * ends at most this often; 0: on every trigger), {@code endCheckMs} (while the watcher is quiet,
 * such a check asks only the held topics' ends, and every partition's at most this often: the
 * watcher already sees a record, a truncation or a re-creation; this is the check behind it),
 * {@code topicRefreshMs} (how often the pattern's
 * topics are listed again, so a new topic or partition is read within it: each listing describes
 * every topic of the source cluster, and listing every second was most of an idle query's own CPU
 * at thousands of partitions; MM2 lists every {@code refresh.topics.interval.seconds}, 600 s),
 * {@code holdPattern} and {@code holdMs} (topics whose records alone start a batch at most every
 * holdMs: heartbeats, see {@link IdleHold}) and
 * {@code failOnDataLoss} (mirrorspark.data.loss = fail: records gone before they were read fail the
 * task instead of being skipped) and
 * {@code assign} (JSON {@code {"topic":[0,1]}}, as Spark's Kafka source takes it: exactly these
 * partitions; required in real-time mode, where a source that read beyond the flow's plan would
 * move past records the sink drops).
 */
public final class SourceSettings implements Serializable {
    private static final long serialVersionUID = 1L;

    public final Map<String, String> consumer;
    public final String pattern;
    public final String startingOffsets;
    public final long maxRecords;
    public final int groups;
    public final long pollTimeoutMs;
    public final long topicRefreshMs;
    public final long idleCheckMs;
    public final long endCheckMs;
    public final boolean failOnDataLoss;
    public final String holdPattern;
    public final long holdMs;
    /** The partitions of {@code assign}, sorted; null when the option is absent. */
    public final List<TopicPartition> assigned;
    /** The flow's name: the key under which the driver hands real-time give-ups to mirrorspark ({@link RealTimeDrops}). */
    public final String flow;

    public SourceSettings(Map<String, String> options) {
        Map<String, String> kafka = new HashMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().toLowerCase(java.util.Locale.ROOT).startsWith("kafka.")) {
                kafka.put(e.getKey().substring("kafka.".length()), e.getValue());
            }
        }
        if (!kafka.containsKey("bootstrap.servers")) {
            throw new IllegalArgumentException("kafka.bootstrap.servers is required");
        }
        this.consumer = kafka;
        this.pattern = required(options, "subscribePattern");
        Pattern.compile(pattern);
        this.startingOffsets = get(options, "startingOffsets", "latest");
        this.maxRecords = Long.parseLong(get(options, "maxOffsetsPerTrigger", "0"));
        this.groups = Math.max(1, Integer.parseInt(get(options, "groups", "2")));
        this.pollTimeoutMs = Long.parseLong(get(options, "pollTimeoutMs", "120000"));
        this.topicRefreshMs = Long.parseLong(get(options, "topicRefreshMs", "5000"));
        this.idleCheckMs = Long.parseLong(get(options, "idleCheckMs", "5000"));
        this.endCheckMs = Long.parseLong(get(options, "endCheckMs", "30000"));
        this.failOnDataLoss = Boolean.parseBoolean(get(options, "failOnDataLoss", "false").trim());
        this.holdPattern = get(options, "holdPattern", "");
        if (!holdPattern.isEmpty()) {
            Pattern.compile(holdPattern);
        }
        this.holdMs = Long.parseLong(get(options, "holdMs", "0"));
        String assign = get(options, "assign", null);
        this.assigned = assign == null || assign.isBlank() ? null : parseAssign(assign);
        this.flow = get(options, "flow", "");
    }

    /** {@code {"topic":[0,1]}}: the partitions, sorted by topic then partition. */
    static List<TopicPartition> parseAssign(String json) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("assign: not JSON of topic -> partitions: " + json, e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("assign: not a JSON object of topic -> partitions: " + json);
        }
        List<TopicPartition> out = new ArrayList<>();
        for (Map.Entry<String, JsonNode> topic : root.properties()) {
            if (!topic.getValue().isArray()) {
                throw new IllegalArgumentException("assign: topic " + topic.getKey() + " needs a list of partitions");
            }
            for (JsonNode p : topic.getValue()) {
                if (!p.canConvertToInt() || p.asInt() < 0) {
                    throw new IllegalArgumentException("assign: topic " + topic.getKey() + " has partition " + p);
                }
                out.add(new TopicPartition(topic.getKey(), p.asInt()));
            }
        }
        out.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        return List.copyOf(out);
    }

    /** read_committed: end offsets are the last stable offsets, as the consumer reads them. */
    public boolean readCommitted() {
        return "read_committed".equalsIgnoreCase(consumer.getOrDefault("isolation.level", "").trim());
    }

    private static String get(Map<String, String> options, String key, String fallback) {
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().equalsIgnoreCase(key)) {
                return e.getValue();
            }
        }
        return fallback;
    }

    private static String required(Map<String, String> options, String key) {
        String value = get(options, key, null);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException(key + " is required");
        }
        return value;
    }
}
