package io.mirrorspark.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's consumer for the control plane's reads (internal topics, a takeover's comparison, the lag
 * probe), with the cluster's settings as MM2 gives them. Partitions are assigned, never subscribed:
 * each reader knows what it reads. One thread uses one bridge, as Kafka's consumer requires.
 */
public final class ConsumerBridge implements AutoCloseable {
    /** The position of an assignment that starts where the group's committed offset (or the reset policy) says. */
    static final long STORED = -1000;
    static final long BEGINNING = -2;
    static final long END = -1;

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Deque<ConsumerRecord<byte[], byte[]>> pending = new ArrayDeque<>();
    private final boolean reportEnds;
    private final Set<TopicPartition> atEnd = new java.util.HashSet<>();
    private final ConcurrentLinkedQueue<String> rebalances = new ConcurrentLinkedQueue<>();

    public ConsumerBridge(Map<String, String> settings) {
        this(settings, false);
    }

    /**
     * {@code reportEnds}: a poll also names the assigned partitions it has read to their end (once
     * each time it gets there), as librdkafka's {@code enable.partition.eof} does.
     */
    public ConsumerBridge(Map<String, String> settings, boolean reportEnds) {
        this.reportEnds = reportEnds;
        Map<String, Object> conf = new HashMap<>(settings);
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try {
            this.consumer = new KafkaConsumer<>(conf);
        } catch (RuntimeException e) {
            throw ClientError.of("creating a consumer", e);
        }
    }

    /** {@code partitions}: {@code [[topic, partition, offset]]}; offset -2 the beginning, -1 the end, -1001 or -1000 the stored position. */
    public void assign(String partitions) {
        Map<TopicPartition, Long> wanted = new LinkedHashMap<>();
        for (JsonNode row : AdminBridge.array(partitions, "partitions")) {
            wanted.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()), row.size() > 2 ? row.get(2).asLong() : STORED);
        }
        pending.clear();
        atEnd.clear();
        try {
            consumer.assign(wanted.keySet());
            for (var e : wanted.entrySet()) {
                long at = e.getValue();
                if (at >= 0) {
                    consumer.seek(e.getKey(), at);
                } else if (at == BEGINNING) {
                    consumer.seekToBeginning(List.of(e.getKey()));
                } else if (at == END) {
                    consumer.seekToEnd(List.of(e.getKey()));
                }
            }
        } catch (RuntimeException e) {
            throw ClientError.of("assigning " + wanted.keySet(), e);
        }
    }

    /** Up to {@code max} records, waiting at most {@code timeoutMs} for the first; {@link RecordCodec}'s form. */
    public byte[] poll(int max, int timeoutMs) {
        if (pending.isEmpty()) {
            try {
                consumer.poll(Duration.ofMillis(Math.max(0, timeoutMs))).forEach(pending::add);
            } catch (RuntimeException e) {
                throw ClientError.of("polling", e);
            }
        }
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>(Math.min(max, pending.size()));
        while (out.size() < max && !pending.isEmpty()) {
            ConsumerRecord<byte[], byte[]> record = pending.poll();
            atEnd.remove(new TopicPartition(record.topic(), record.partition()));
            out.add(record);
        }
        return RecordCodec.encode(out, reportEnds && pending.isEmpty() ? ends() : List.of());
    }

    /** Assigned partitions newly read to their end: no record waiting here and none left before the
     * end the last fetch saw (the last stable offset under read_committed: markers count as read). */
    private List<Map.Entry<TopicPartition, Long>> ends() {
        List<Map.Entry<TopicPartition, Long>> out = new ArrayList<>();
        for (TopicPartition tp : consumer.assignment()) {
            java.util.OptionalLong lag = consumer.currentLag(tp);
            if (lag.isPresent() && lag.getAsLong() == 0 && atEnd.add(tp)) {
                out.add(Map.entry(tp, consumer.position(tp)));
            } else if (lag.isPresent() && lag.getAsLong() > 0) {
                atEnd.remove(tp);
            }
        }
        return out;
    }

    /**
     * Join the consumer's group for {@code topics} (a JSON array); what the group gives and takes is
     * told by {@link #rebalances}, as librdkafka's rebalance callbacks would tell it.
     */
    public void subscribe(String topics) {
        List<String> names = new ArrayList<>();
        AdminBridge.array(topics, "topics").forEach(n -> names.add(n.asText()));
        consumer.subscribe(names, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
                rebalances.add(event("revoked", partitions));
            }

            @Override
            public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                rebalances.add(event("assigned", partitions));
            }

            @Override
            public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
                rebalances.add(event("lost", partitions));
            }
        });
    }

    private static String event(String kind, java.util.Collection<TopicPartition> partitions) {
        ArrayNode row = AdminBridge.JSON.createArrayNode().add(kind);
        ArrayNode tps = row.addArray();
        partitions.forEach(tp -> tps.addArray().add(tp.topic()).add(tp.partition()));
        return row.toString();
    }

    /** The rebalances since the last call, in order: {@code [[kind, [[topic, partition]]]]}, kind assigned, revoked or lost. */
    public String rebalances() {
        StringBuilder out = new StringBuilder("[");
        for (String row = rebalances.poll(); row != null; row = rebalances.poll()) {
            out.append(out.length() > 1 ? "," : "").append(row);
        }
        return out.append(']').toString();
    }

    /** The member id the group gave this consumer ("" before it joined). */
    public String memberId() {
        return consumer.groupMetadata().memberId();
    }

    /** The partitions assigned now: {@code [[topic, partition]]}. */
    public String assignment() {
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        consumer.assignment().forEach(tp -> out.addArray().add(tp.topic()).add(tp.partition()));
        return out.toString();
    }

    /**
     * Stop fetching {@code partitions} ({@code [[topic, partition]]}, assigned ones): a group member that
     * only holds its partitions (the flow's lease) sends no fetches and gets no records, so each of its
     * rounds is paced by its poll's timeout, not by records arriving.
     */
    public void pause(String partitions) {
        List<TopicPartition> wanted = new ArrayList<>();
        for (JsonNode row : AdminBridge.array(partitions, "partitions")) {
            wanted.add(new TopicPartition(row.get(0).asText(), row.get(1).asInt()));
        }
        try {
            consumer.pause(wanted);
        } catch (RuntimeException e) {
            throw ClientError.of("pausing " + wanted, e);
        }
        wanted.forEach(tp -> pending.removeIf(r -> r.topic().equals(tp.topic()) && r.partition() == tp.partition()));
    }

    /** Give up every assigned partition. */
    public void unassign() {
        pending.clear();
        atEnd.clear();
        consumer.unsubscribe();
    }

    /** {@code [low, high]} of the partition (high: the last stable offset under read_committed). */
    public long[] watermarks(String topic, int partition, int timeoutMs) {
        TopicPartition tp = new TopicPartition(topic, partition);
        try {
            Duration timeout = Duration.ofMillis(timeoutMs);
            long low = consumer.beginningOffsets(Set.of(tp), timeout).get(tp);
            long high = consumer.endOffsets(Set.of(tp), timeout).get(tp);
            return new long[] {low, high};
        } catch (RuntimeException e) {
            throw ClientError.of("reading the watermarks of " + tp, e);
        }
    }

    /** {@code partitions}: {@code [[topic, partition, timestamp]]}; answers {@code [[topic, partition, offset]]}, -1 past the end. */
    public String offsetsForTimes(String partitions, int timeoutMs) {
        Map<TopicPartition, Long> wanted = new LinkedHashMap<>();
        AdminBridge.array(partitions, "partitions").forEach(row ->
            wanted.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()), row.get(2).asLong()));
        // librdkafka's special times, which Kafka's consumer refuses as negative: -1 the end, -2 the beginning.
        Map<TopicPartition, Long> timed = new LinkedHashMap<>();
        List<TopicPartition> ends = new ArrayList<>();
        List<TopicPartition> starts = new ArrayList<>();
        wanted.forEach((tp, at) -> {
            if (at == END) {
                ends.add(tp);
            } else if (at == BEGINNING) {
                starts.add(tp);
            } else {
                timed.put(tp, at);
            }
        });
        Duration timeout = Duration.ofMillis(timeoutMs);
        Map<TopicPartition, Long> offsets = new HashMap<>();
        if (!timed.isEmpty()) {
            ask("looking up offsets by time", () -> consumer.offsetsForTimes(timed, timeout))
                .forEach((tp, at) -> offsets.put(tp, at == null ? END : at.offset()));
        }
        if (!ends.isEmpty()) {
            offsets.putAll(ask("looking up end offsets", () -> consumer.endOffsets(ends, timeout)));
        }
        if (!starts.isEmpty()) {
            offsets.putAll(ask("looking up start offsets", () -> consumer.beginningOffsets(starts, timeout)));
        }
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        wanted.keySet().forEach(tp -> out.addArray().add(tp.topic()).add(tp.partition()).add(offsets.getOrDefault(tp, END)));
        return out.toString();
    }

    /** The group's committed offsets of {@code partitions} ({@code [[topic, partition]]}): {@code [[topic, partition, offset, metadata]]}, -1001 when none. */
    public String committed(String partitions, int timeoutMs) {
        Set<TopicPartition> wanted = new java.util.LinkedHashSet<>();
        AdminBridge.array(partitions, "partitions").forEach(row -> wanted.add(new TopicPartition(row.get(0).asText(), row.get(1).asInt())));
        Map<TopicPartition, OffsetAndMetadata> found =
            ask("reading committed offsets", () -> consumer.committed(wanted, Duration.ofMillis(timeoutMs)));
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        wanted.forEach(tp -> {
            OffsetAndMetadata om = found.get(tp);
            out.addArray().add(tp.topic()).add(tp.partition()).add(om == null ? -1001 : om.offset())
                .add(om == null ? null : om.metadata());
        });
        return out.toString();
    }

    /** Commit {@code offsets} ({@code [[topic, partition, offset, metadata]]}) for the consumer's group. */
    public void commit(String offsets, int timeoutMs) {
        Map<TopicPartition, OffsetAndMetadata> wanted = new LinkedHashMap<>();
        AdminBridge.array(offsets, "offsets").forEach(row ->
            wanted.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()), new OffsetAndMetadata(row.get(2).asLong(),
                row.size() > 3 && !row.get(3).isNull() ? row.get(3).asText() : "")));
        try {
            consumer.commitSync(wanted, Duration.ofMillis(timeoutMs));
        } catch (RuntimeException e) {
            throw ClientError.of("committing offsets", e);
        }
    }

    /** The partitions of {@code topic} (or of every topic when null): {@code {name: [[id, leader, [replicas], [isr]]]}}; an unknown topic is absent. */
    public String partitions(String topic, int timeoutMs) {
        Duration timeout = Duration.ofMillis(timeoutMs);
        Map<String, List<PartitionInfo>> found = new LinkedHashMap<>();
        try {
            if (topic == null) {
                found.putAll(consumer.listTopics(timeout));
            } else {
                List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
                if (infos != null && !infos.isEmpty()) {
                    found.put(topic, infos);
                }
            }
        } catch (RuntimeException e) {
            throw ClientError.of("reading metadata", e);
        }
        ObjectNode out = AdminBridge.JSON.createObjectNode();
        found.forEach((name, infos) -> {
            ArrayNode rows = out.putArray(name);
            for (PartitionInfo info : infos) {
                ArrayNode row = rows.addArray().add(info.partition()).add(info.leader() == null ? -1 : info.leader().id());
                ArrayNode replicas = row.addArray();
                for (var n : info.replicas()) {
                    replicas.add(n.id());
                }
                ArrayNode isr = row.addArray();
                for (var n : info.inSyncReplicas()) {
                    isr.add(n.id());
                }
            }
        });
        return out.toString();
    }

    /** {@code call}'s answer; its failure as a {@link ClientError} saying {@code what} failed. */
    private static <T> T ask(String what, java.util.function.Supplier<T> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            throw ClientError.of(what, e);
        }
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }
}
