package io.mirrorspark.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import io.mirrorspark.kafka.OpenTransactions;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One cluster's consumer groups through Kafka's own Admin client, for the driver's control plane:
 * the groups a checkpoint round reads, the target groups the group offset sync writes, the lease
 * group a writer asks about. The settings are the cluster's client keys as MM2 passes them to its
 * admin client, unchanged.
 *
 * <p>Why Java here: these are group-coordinator requests, and librdkafka aborts the whole process
 * when one meets a connection that has just dropped (its issue 4605); Kafka's client fails the call
 * instead. Values cross py4j as JSON text, so Python never holds a Kafka object.
 *
 * <p>A cluster that does not answer (a timeout, a retriable error) raises {@link NotAnswering};
 * anything else (authorization, a request the cluster refuses) raises {@link Refused}.
 */
public final class GroupAdmin implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Admin admin;
    private final Map<String, String> settings;

    public GroupAdmin(Map<String, String> settings) {
        this.settings = Map.copyOf(settings);
        this.admin = Admin.create(new HashMap<String, Object>(settings));
    }

    /** The ids of the cluster's consumer groups, as a JSON array (sorted). */
    public String groupIds(int timeoutMs) {
        var listed = admin.listConsumerGroups(new ListConsumerGroupsOptions().timeoutMs(timeoutMs)).all();
        ArrayNode out = JSON.createArrayNode();
        get(listed, timeoutMs, "listing consumer groups").stream()
            .map(ConsumerGroupListing::groupId).sorted().forEach(out::add);
        return out.toString();
    }

    /**
     * The group's committed offsets, as a JSON array of {@code [topic, partition, offset, metadata]};
     * partitions without a committed offset are left out.
     */
    public String committed(String group, int timeoutMs) {
        var found = admin.listConsumerGroupOffsets(group, new ListConsumerGroupOffsetsOptions().timeoutMs(timeoutMs))
            .partitionsToOffsetAndMetadata();
        return encode(get(found, timeoutMs, "reading the offsets of group " + group));
    }

    /** The group's state (Kafka's name, e.g. {@code EMPTY}, {@code STABLE}, {@code DEAD}) and its member count. */
    public String describe(String group, int timeoutMs) {
        var described = admin.describeConsumerGroups(java.util.List.of(group),
            new DescribeConsumerGroupsOptions().timeoutMs(timeoutMs)).describedGroups().get(group);
        ConsumerGroupDescription description = get(described, timeoutMs, "describing group " + group);
        ObjectNode out = JSON.createObjectNode();
        out.put("state", description.state().name());
        out.put("members", description.members().size());
        return out.toString();
    }

    /**
     * Many groups in one call, as MM2's checkpoint task describes its groups: one request per
     * coordinator instead of one per group (the client's first try of the new protocol's request, and
     * its fallback, then happen once a round, not once a group). {@code groups} is a JSON array of
     * ids; the answer a JSON object from each id to {@code {"state", "members"}}, or to
     * {@code {"refused": why}} for a group the cluster refused. A cluster that does not answer for
     * any of them raises {@link NotAnswering}: the round ends there.
     */
    public String describeAll(String groups, int timeoutMs) {
        java.util.List<String> ids = new java.util.ArrayList<>();
        try {
            JsonNode parsed = JSON.readTree(groups);
            if (parsed == null || !parsed.isArray()) {
                throw new IllegalArgumentException("groups must be a JSON array of group ids");
            }
            parsed.forEach(id -> ids.add(id.asText()));
        } catch (IOException e) {
            throw new IllegalArgumentException("groups are not JSON: " + e.getMessage(), e);
        }
        ObjectNode out = JSON.createObjectNode();
        if (ids.isEmpty()) {
            return out.toString();
        }
        var described = admin.describeConsumerGroups(ids, new DescribeConsumerGroupsOptions().timeoutMs(timeoutMs))
            .describedGroups();
        for (String id : new java.util.TreeSet<>(ids)) {
            ObjectNode row = out.putObject(id);
            try {
                ConsumerGroupDescription description = get(described.get(id), timeoutMs, "describing group " + id);
                row.put("state", description.state().name());
                row.put("members", description.members().size());
            } catch (Refused refused) {
                row.put("refused", refused.getMessage());
            }
        }
        return out.toString();
    }

    /**
     * The group's offsets for {@code partitions} (a JSON array of {@code [topic, partition]}) as a
     * read_committed consumer sees them (require_stable): a JSON object with {@code "offsets"} (rows as
     * {@link #committed} returns them) and {@code "open"}, the partitions whose offset sits in a
     * transaction still open. Kafka's Admin client leaves such a partition out of its answer (it
     * drops partition-level errors, UNSTABLE_OFFSET_COMMIT among them) while one without a committed
     * offset comes back empty, so a requested partition missing from the answer is an open one.
     */
    public String committedStable(String group, String partitions, int timeoutMs) {
        java.util.List<TopicPartition> wanted = new java.util.ArrayList<>();
        for (JsonNode row : array(partitions, "partitions")) {
            if (!row.isArray() || row.size() != 2 || !row.get(0).isTextual() || !row.get(1).canConvertToInt()) {
                throw new IllegalArgumentException("not [topic, partition]: " + row);
            }
            wanted.add(new TopicPartition(row.get(0).asText(), row.get(1).asInt()));
        }
        ObjectNode out = JSON.createObjectNode();
        Map<TopicPartition, OffsetAndMetadata> found = wanted.isEmpty() ? Map.of() : get(
            admin.listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(wanted)),
                new ListConsumerGroupOffsetsOptions().requireStable(true).timeoutMs(timeoutMs))
                .partitionsToOffsetAndMetadata(group),
            timeoutMs, "reading the stable offsets of group " + group);
        try {
            out.set("offsets", JSON.readTree(encode(found)));
        } catch (IOException e) {
            throw new IllegalStateException("encoded offsets did not parse", e);
        }
        ArrayNode open = out.putArray("open");
        wanted.stream().filter(tp -> !found.containsKey(tp))
            .sorted(java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition))
            .forEach(tp -> open.addArray().add(tp.topic()).add(tp.partition()));
        return out.toString();
    }

    /**
     * Start a transactional producer with each id of {@code transactionalIds} (a JSON array): the broker
     * aborts a transaction the previous holder of the id left open and refuses that holder from now on,
     * as the sink's own producer would at its first batch.
     */
    public void fence(String transactionalIds, int timeoutMs) {
        for (JsonNode id : array(transactionalIds, "transactional ids")) {
            Map<String, Object> conf = new HashMap<>(settings);
            conf.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id.asText());
            conf.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeoutMs);
            conf.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            conf.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(conf)) {
                producer.initTransactions();
            } catch (org.apache.kafka.common.KafkaException e) {
                if (notAnswering(e)) {
                    throw new NotAnswering("fencing transactional id " + id.asText() + ": " + e, e);
                }
                throw new Refused("fencing transactional id " + id.asText() + ": " + e, e);
            }
        }
    }

    /**
     * Fences every transactional id under {@code prefix} whose transaction is open on the target
     * ({@link OpenTransactions}): a flow's ids follow the task layout of whichever writer held them.
     * Returns the ids fenced, a JSON array.
     */
    public String fenceOpen(String prefix, int timeoutMs) {
        ArrayNode out = JSON.createArrayNode();
        answered(() -> OpenTransactions.fence(admin, prefix, timeoutMs), timeoutMs,
            "fencing the open transactions under " + prefix).forEach(out::add);
        return out.toString();
    }

    private static JsonNode array(String text, String what) {
        JsonNode parsed;
        try {
            parsed = JSON.readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException(what + " are not JSON: " + e.getMessage(), e);
        }
        if (parsed == null || !parsed.isArray()) {
            throw new IllegalArgumentException(what + " must be a JSON array");
        }
        return parsed;
    }

    /** Commit {@code offsets} (JSON as {@link #committed} returns it) for {@code group}, which must have no members. */
    public void commit(String group, String offsets, int timeoutMs) {
        var altered = admin.alterConsumerGroupOffsets(group, decode(offsets),
            new AlterConsumerGroupOffsetsOptions().timeoutMs(timeoutMs)).all();
        get(altered, timeoutMs, "committing offsets of group " + group);
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(5));
    }

    static String encode(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Map<Integer, OffsetAndMetadata>> sorted = new TreeMap<>();
        offsets.forEach((tp, om) -> {
            if (om != null && om.offset() >= 0) {
                sorted.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).put(tp.partition(), om);
            }
        });
        ArrayNode out = JSON.createArrayNode();
        sorted.forEach((topic, partitions) -> partitions.forEach((partition, om) -> {
            ArrayNode row = out.addArray();
            row.add(topic).add(partition).add(om.offset()).add(om.metadata() == null ? "" : om.metadata());
        }));
        return out.toString();
    }

    static Map<TopicPartition, OffsetAndMetadata> decode(String offsets) {
        JsonNode rows;
        try {
            rows = JSON.readTree(offsets);
        } catch (IOException e) {
            throw new IllegalArgumentException("offsets are not JSON: " + e.getMessage(), e);
        }
        if (rows == null || !rows.isArray()) {
            throw new IllegalArgumentException("offsets must be a JSON array of [topic, partition, offset, metadata]");
        }
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (JsonNode row : rows) {
            if (!row.isArray() || row.size() != 4 || !row.get(0).isTextual() || !row.get(1).canConvertToInt()
                || !row.get(2).canConvertToLong() || row.get(2).asLong() < 0 || !row.get(3).isTextual()) {
                throw new IllegalArgumentException("not [topic, partition, offset >= 0, metadata]: " + row);
            }
            out.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()),
                new OffsetAndMetadata(row.get(2).asLong(), row.get(3).asText()));
        }
        return out;
    }

    private static <T> T get(KafkaFuture<T> future, int timeoutMs, String what) {
        // The call's own timeout ends it first; this bound only guards against a future never completed.
        return answered(() -> future.get(timeoutMs + 5_000L, TimeUnit.MILLISECONDS), timeoutMs, what);
    }

    /** A cluster's answer, waited for by {@code call}, or {@link NotAnswering} / {@link Refused} saying {@code what}. */
    private static <T> T answered(Asked<T> call, int timeoutMs, String what) {
        try {
            return call.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NotAnswering(what + ": interrupted", e);
        } catch (TimeoutException e) {
            throw new NotAnswering(what + ": no answer in " + timeoutMs + " ms", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (notAnswering(cause)) {
                throw new NotAnswering(what + ": " + cause, cause);
            }
            throw new Refused(what + ": " + cause, cause);
        }
    }

    /** A wait for a cluster's answer. */
    private interface Asked<T> {
        T get() throws InterruptedException, ExecutionException, TimeoutException;
    }

    /** A retriable error anywhere in the chain ("Failed to find brokers" wraps a timeout, for one). */
    static boolean notAnswering(Throwable error) {
        for (Throwable at = error; at != null; at = at.getCause() == at ? null : at.getCause()) {
            if (at instanceof RetriableException) {  // Kafka's TimeoutException is one too
                return true;
            }
        }
        return false;
    }

    /** The cluster did not answer (down, a coordinator moving, a timeout): ask again later. */
    public static final class NotAnswering extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotAnswering(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The cluster answered and refused (authorization, a group with members, a bad request). */
    public static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
