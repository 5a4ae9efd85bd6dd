package io.mirrorspark.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateAclsOptions;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DeleteAclsOptions;
import org.apache.kafka.clients.admin.DeleteConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeAclsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Kafka's Admin client for the control plane, made from a cluster's client settings exactly as MM2
 * gives them to its admin client: every key (JAAS, callback handlers, stores, {@code client.dns.lookup},
 * reporters) means what it means in MM2, since this is the same client.
 *
 * <p>Requests and answers cross py4j as JSON text. A request about several things (topics, groups,
 * configs) answers each one: {@code {"ok": ...}} or {@code {"error": [code, retriable, text]}}, the
 * codes Kafka's protocol gives (see {@link ClientError}); a request about one thing, or one that failed
 * as a whole, throws {@link ClientError}.
 */
public final class AdminBridge implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    private final Admin admin;

    public AdminBridge(Map<String, String> settings) {
        try {
            this.admin = Admin.create(new HashMap<String, Object>(settings));
        } catch (RuntimeException e) {
            throw ClientError.of("creating an admin client", e);
        }
    }

    /** The client itself, for the requests of newer Kafka versions (jvm/clients: share groups). */
    Admin admin() {
        return admin;
    }

    /**
     * The cluster's brokers and topics (all of them, internal ones included, or just {@code topic}):
     * {@code {"cluster_id", "controller_id", "brokers": [[id, host, port]], "topics": {name: {"error",
     * "partitions": [[id, leader, [replicas], [isr]]]}}}}; a topic asked for by name that does not exist
     * comes back with its error, as a metadata request answers it.
     */
    public String metadata(String topic, int timeoutMs) {
        ObjectNode out = JSON.createObjectNode();
        DescribeClusterResult cluster = admin.describeCluster(new DescribeClusterOptions().timeoutMs(timeoutMs));
        out.put("cluster_id", get(cluster.clusterId(), timeoutMs, "describing the cluster"));
        Node controller = get(cluster.controller(), timeoutMs, "describing the cluster");
        out.put("controller_id", controller == null ? -1 : controller.id());
        ArrayNode brokers = out.putArray("brokers");
        for (Node node : get(cluster.nodes(), timeoutMs, "describing the cluster")) {
            brokers.addArray().add(node.id()).add(node.host()).add(node.port());
        }
        List<String> names = new ArrayList<>();
        if (topic == null) {
            names.addAll(get(admin.listTopics(new ListTopicsOptions().listInternal(true).timeoutMs(timeoutMs)).names(),
                timeoutMs, "listing topics"));
        } else {
            names.add(topic);
        }
        ObjectNode topics = out.putObject("topics");
        if (names.isEmpty()) {
            return out.toString();
        }
        Map<String, KafkaFuture<TopicDescription>> described =
            admin.describeTopics(names, new DescribeTopicsOptions().timeoutMs(timeoutMs)).topicNameValues();
        for (String name : names) {
            ObjectNode row = topics.putObject(name);
            try {
                TopicDescription description = get(described.get(name), timeoutMs, "describing topic " + name);
                row.putNull("error");
                ArrayNode partitions = row.putArray("partitions");
                for (TopicPartitionInfo info : description.partitions()) {
                    ArrayNode p = partitions.addArray().add(info.partition()).add(info.leader() == null ? -1 : info.leader().id());
                    ArrayNode replicas = p.addArray();
                    info.replicas().forEach(n -> replicas.add(n.id()));
                    ArrayNode isr = p.addArray();
                    info.isr().forEach(n -> isr.add(n.id()));
                }
            } catch (ClientError e) {
                if (topic == null && e.getCause() instanceof UnknownTopicOrPartitionException) {
                    topics.remove(name);  // deleted between the listing and the description
                    continue;
                }
                if (topic == null || !(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw e;
                }
                row.set("error", error(e));
                row.putArray("partitions");
            }
        }
        return out.toString();
    }

    /**
     * Every topic of the cluster with its partition count, {@code {name: count}}: what {@link #metadata}
     * lists, without the brokers, leaders, replicas and ISRs. Why: the topic refresh and the lag probe
     * ask it every few seconds, and thousands of partitions written out and parsed each time cost more
     * than the asking.
     */
    public String partitionCounts(int timeoutMs) {
        ObjectNode out = JSON.createObjectNode();
        List<String> names = new ArrayList<>(get(admin.listTopics(new ListTopicsOptions().listInternal(true)
            .timeoutMs(timeoutMs)).names(), timeoutMs, "listing topics"));
        if (names.isEmpty()) {
            return out.toString();
        }
        Map<String, KafkaFuture<TopicDescription>> described =
            admin.describeTopics(names, new DescribeTopicsOptions().timeoutMs(timeoutMs)).topicNameValues();
        for (String name : names) {
            try {
                out.put(name, get(described.get(name), timeoutMs, "describing topic " + name).partitions().size());
            } catch (ClientError e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw e;
                }  // deleted between the listing and the description
            }
        }
        return out.toString();
    }

    /** {@code {"cluster_id", "controller": node, "nodes": [node]}}, a node as {@code [id, host, port, rack]}. */
    public String describeCluster(int timeoutMs) {
        DescribeClusterResult cluster = admin.describeCluster(new DescribeClusterOptions().timeoutMs(timeoutMs));
        ObjectNode out = JSON.createObjectNode();
        out.put("cluster_id", get(cluster.clusterId(), timeoutMs, "describing the cluster"));
        out.set("controller", node(get(cluster.controller(), timeoutMs, "describing the cluster")));
        ArrayNode nodes = out.putArray("nodes");
        get(cluster.nodes(), timeoutMs, "describing the cluster").forEach(n -> nodes.add(node(n)));
        return out.toString();
    }

    /** Each topic of {@code topics} (a JSON array): {@code {"id", "internal", "partitions": [[id, leader, [replicas], [isr]]]}}, nodes as in {@link #describeCluster}. */
    public String describeTopics(String topics, int timeoutMs) {
        return eachDescribed(topics, timeoutMs, d -> {
            ObjectNode ok = JSON.createObjectNode();
            ok.put("id", d.topicId() == null ? null : d.topicId().toString());
            ok.put("internal", d.isInternal());
            ArrayNode partitions = ok.putArray("partitions");
            for (TopicPartitionInfo info : d.partitions()) {
                ArrayNode p = partitions.addArray().add(info.partition());
                p.add(node(info.leader()));
                ArrayNode replicas = p.addArray();
                info.replicas().forEach(n -> replicas.add(node(n)));
                ArrayNode isr = p.addArray();
                info.isr().forEach(n -> isr.add(node(n)));
            }
            return ok;
        });
    }

    /**
     * Each topic of {@code topics} (a JSON array): {@code {"id", "leaders": [[partition, leader id or -1]]}}.
     * Why: the topic refresh's identity check needs ids and leaders alone, and the nodes of every
     * partition's replicas and ISR, made into Python objects, were most of its time at 10,000 partitions.
     */
    public String topicLeaders(String topics, int timeoutMs) {
        return eachDescribed(topics, timeoutMs, d -> {
            ObjectNode ok = JSON.createObjectNode();
            ok.put("id", d.topicId() == null ? null : d.topicId().toString());
            ArrayNode leaders = ok.putArray("leaders");
            for (TopicPartitionInfo info : d.partitions()) {
                leaders.addArray().add(info.partition()).add(info.leader() == null || info.leader().isEmpty()
                    ? -1 : info.leader().id());
            }
            return ok;
        });
    }

    /**
     * Each topic of {@code topics} (a JSON array): its id, as {@link #describeTopics} gives it. Why: a
     * flow asks its source's topic ids every few seconds (a re-created topic is seen by its new id), and
     * the partitions, replicas and ISRs of thousands of partitions, written out and parsed each time,
     * were most of an idle flow's control-plane CPU.
     */
    public String topicIds(String topics, int timeoutMs) {
        return eachDescribed(topics, timeoutMs, d -> d.topicId() == null ? JSON.nullNode()
            : JSON.getNodeFactory().textNode(d.topicId().toString()));
    }

    /** {@link #each} over the topics of {@code topics} (a JSON array), each answered from its description. */
    private String eachDescribed(String topics, int timeoutMs, Function<TopicDescription, JsonNode> answer) {
        List<String> names = new ArrayList<>();
        array(topics, "topics").forEach(n -> names.add(n.asText()));
        Map<String, KafkaFuture<TopicDescription>> described =
            admin.describeTopics(names, new DescribeTopicsOptions().timeoutMs(timeoutMs)).topicNameValues();
        return each(names, name -> answer.apply(get(described.get(name), timeoutMs, "describing topic " + name)))
            .toString();
    }

    /**
     * The configs of each resource of {@code resources} (a JSON array of {@code [type, name]}, type
     * {@code TOPIC} or {@code BROKER}): {@code [[name, value, source, readOnly, default, sensitive]]}.
     */
    public String describeConfigs(String resources, int timeoutMs) {
        Map<String, ConfigResource> wanted = new LinkedHashMap<>();
        for (JsonNode row : array(resources, "resources")) {
            wanted.put(row.get(0).asText() + ":" + row.get(1).asText(),
                new ConfigResource(ConfigResource.Type.valueOf(row.get(0).asText()), row.get(1).asText()));
        }
        Map<ConfigResource, KafkaFuture<Config>> found =
            admin.describeConfigs(wanted.values(), new DescribeConfigsOptions().timeoutMs(timeoutMs)).values();
        return each(wanted.keySet(), key -> {
            Config config = get(found.get(wanted.get(key)), timeoutMs, "describing the configs of " + key);
            ArrayNode entries = JSON.createArrayNode();
            for (ConfigEntry e : config.entries()) {
                entries.addArray().add(e.name()).add(e.value()).add(e.source().name()).add(e.isReadOnly())
                    .add(e.isDefault()).add(e.isSensitive());
            }
            return entries;
        }).toString();
    }

    /** {@code resources}: a JSON array of {@code [type, name, [[key, value, op]]]}, op {@code SET}, {@code DELETE}, {@code APPEND} or {@code SUBTRACT}. */
    public String incrementalAlterConfigs(String resources, int timeoutMs) {
        Map<String, ConfigResource> keys = new LinkedHashMap<>();
        Map<ConfigResource, Collection<AlterConfigOp>> ops = new LinkedHashMap<>();
        for (JsonNode row : array(resources, "resources")) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.valueOf(row.get(0).asText()), row.get(1).asText());
            keys.put(row.get(0).asText() + ":" + row.get(1).asText(), resource);
            List<AlterConfigOp> list = new ArrayList<>();
            for (JsonNode op : row.get(2)) {
                list.add(new AlterConfigOp(new ConfigEntry(op.get(0).asText(), op.get(1).isNull() ? null : op.get(1).asText()),
                    AlterConfigOp.OpType.valueOf(op.get(2).asText())));
            }
            ops.put(resource, list);
        }
        Map<ConfigResource, KafkaFuture<Void>> done =
            admin.incrementalAlterConfigs(ops, new AlterConfigsOptions().timeoutMs(timeoutMs)).values();
        return each(keys.keySet(), key -> {
            get(done.get(keys.get(key)), timeoutMs, "altering the configs of " + key);
            return JSON.nullNode();
        }).toString();
    }

    /** {@code topics}: a JSON array of {@code [name, partitions, replicationFactor, {config}]} (-1: the broker's default). */
    public String createTopics(String topics, int timeoutMs) {
        List<NewTopic> wanted = new ArrayList<>();
        for (JsonNode row : array(topics, "topics")) {
            int partitions = row.get(1).asInt();
            short factor = (short) row.get(2).asInt();
            NewTopic topic = new NewTopic(row.get(0).asText(),
                partitions < 0 ? java.util.Optional.empty() : java.util.Optional.of(partitions),
                factor < 0 ? java.util.Optional.empty() : java.util.Optional.of(factor));
            Map<String, String> configs = new HashMap<>();
            row.get(3).properties().forEach(e -> configs.put(e.getKey(), e.getValue().asText()));
            wanted.add(topic.configs(configs));
        }
        Map<String, KafkaFuture<Void>> done = admin.createTopics(wanted, new CreateTopicsOptions().timeoutMs(timeoutMs)).values();
        return each(done.keySet(), name -> {
            get(done.get(name), timeoutMs, "creating topic " + name);
            return JSON.nullNode();
        }).toString();
    }

    /** {@code topics}: a JSON array of {@code [name, totalPartitions]}. */
    public String createPartitions(String topics, int timeoutMs) {
        Map<String, NewPartitions> wanted = new LinkedHashMap<>();
        array(topics, "topics").forEach(row -> wanted.put(row.get(0).asText(), NewPartitions.increaseTo(row.get(1).asInt())));
        Map<String, KafkaFuture<Void>> done =
            admin.createPartitions(wanted, new CreatePartitionsOptions().timeoutMs(timeoutMs)).values();
        return each(wanted.keySet(), name -> {
            get(done.get(name), timeoutMs, "adding partitions to " + name);
            return JSON.nullNode();
        }).toString();
    }

    /**
     * {@code partitions}: a JSON array of {@code [topic, partition, spec]}, spec -2 the earliest, -1 the
     * latest, -3 the largest timestamp, else a timestamp; each answers {@code [offset, timestamp, leaderEpoch]}
     * under the key {@code topic:partition}.
     */
    public String listOffsets(String partitions, boolean readCommitted, int timeoutMs) {
        Map<String, TopicPartition> keys = new LinkedHashMap<>();
        Map<TopicPartition, OffsetSpec> specs = new LinkedHashMap<>();
        for (JsonNode row : array(partitions, "partitions")) {
            String topic = row.get(0).asText();
            int partition = row.get(1).asInt();
            TopicPartition tp = keys.computeIfAbsent(topic + ":" + partition, k -> new TopicPartition(topic, partition));
            long spec = row.get(2).asLong();
            specs.put(tp, spec == -2 ? OffsetSpec.earliest() : spec == -1 ? OffsetSpec.latest()
                : spec == -3 ? OffsetSpec.maxTimestamp() : OffsetSpec.forTimestamp(spec));
        }
        var options = new ListOffsetsOptions(
            readCommitted ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED).timeoutMs(timeoutMs);
        Map<TopicPartition, ListOffsetsResult> results = new IdentityHashMap<>();  // the same keys; no hash runs
        for (Map<TopicPartition, OffsetSpec> part : HashSpread.split(specs)) {  // all sent before any is waited for
            ListOffsetsResult result = admin.listOffsets(part, options);
            part.keySet().forEach(tp -> results.put(tp, result));
        }
        return each(keys.keySet(), key -> {
            TopicPartition tp = keys.get(key);
            var info = get(results.get(tp).partitionResult(tp), timeoutMs, "listing offsets of " + key);
            return JSON.createArrayNode().add(info.offset()).add(info.timestamp()).add(info.leaderEpoch().orElse(-1));
        }).toString();
    }

    /** The ACL bindings matching {@code filter} ({@link #filter}'s form), each as {@link #binding} writes it. */
    public String describeAcls(String filter, int timeoutMs) {
        Collection<AclBinding> found = get(admin.describeAcls(filter(parse(filter, "filter")),
            new DescribeAclsOptions().timeoutMs(timeoutMs)).values(), timeoutMs, "describing ACLs");
        ArrayNode out = JSON.createArrayNode();
        found.forEach(b -> out.add(binding(b)));
        return out.toString();
    }

    /** {@code bindings}: a JSON array of bindings; answers each by its index. */
    public String createAcls(String bindings, int timeoutMs) {
        List<AclBinding> wanted = new ArrayList<>();
        for (JsonNode row : array(bindings, "bindings")) {
            wanted.add(new AclBinding(new ResourcePattern(ResourceType.valueOf(row.get(0).asText()), row.get(1).asText(),
                PatternType.valueOf(row.get(2).asText())), new AccessControlEntry(row.get(3).asText(), row.get(4).asText(),
                AclOperation.valueOf(row.get(5).asText()), AclPermissionType.valueOf(row.get(6).asText()))));
        }
        Map<AclBinding, KafkaFuture<Void>> done = admin.createAcls(wanted, new CreateAclsOptions().timeoutMs(timeoutMs)).values();
        List<String> indexes = new ArrayList<>();
        for (int i = 0; i < wanted.size(); i++) {
            indexes.add(Integer.toString(i));
        }
        return each(indexes, i -> {
            get(done.get(wanted.get(Integer.parseInt(i))), timeoutMs, "creating ACL " + wanted.get(Integer.parseInt(i)));
            return JSON.nullNode();
        }).toString();
    }

    /** {@code filters}: a JSON array of filters; answers each by its index with the bindings it deleted. */
    public String deleteAcls(String filters, int timeoutMs) {
        List<AclBindingFilter> wanted = new ArrayList<>();
        array(filters, "filters").forEach(row -> wanted.add(filter(row)));
        var done = admin.deleteAcls(wanted, new DeleteAclsOptions().timeoutMs(timeoutMs)).values();
        List<String> indexes = new ArrayList<>();
        for (int i = 0; i < wanted.size(); i++) {
            indexes.add(Integer.toString(i));
        }
        return each(indexes, i -> {
            var result = get(done.get(wanted.get(Integer.parseInt(i))), timeoutMs, "deleting ACLs");
            ArrayNode deleted = JSON.createArrayNode();
            result.values().forEach(r -> {
                if (r.exception() == null) {
                    deleted.add(binding(r.binding()));
                }
            });
            return deleted;
        }).toString();
    }

    /** Every consumer group: {@code [[id, simple, state]]}. */
    public String listGroups(int timeoutMs) {
        Collection<ConsumerGroupListing> listed = get(admin.listConsumerGroups(
            new ListConsumerGroupsOptions().timeoutMs(timeoutMs)).all(), timeoutMs, "listing consumer groups");
        ArrayNode out = JSON.createArrayNode();
        for (ConsumerGroupListing g : listed) {
            out.addArray().add(g.groupId()).add(g.isSimpleConsumerGroup())
                .add(g.state().map(Enum::name).orElse("UNKNOWN"));
        }
        return out.toString();
    }

    /**
     * Each group of {@code groups} (a JSON array): {@code {"simple", "state", "assignor", "coordinator": node,
     * "members": [[memberId, clientId, host, instanceId, [[topic, partition]]]]}}.
     */
    public String describeGroups(String groups, int timeoutMs) {
        List<String> ids = new ArrayList<>();
        array(groups, "groups").forEach(n -> ids.add(n.asText()));
        Map<String, KafkaFuture<ConsumerGroupDescription>> described = ids.isEmpty() ? Map.of()
            : admin.describeConsumerGroups(ids, new DescribeConsumerGroupsOptions().timeoutMs(timeoutMs)).describedGroups();
        return each(ids, id -> {
            ConsumerGroupDescription d = get(described.get(id), timeoutMs, "describing group " + id);
            ObjectNode ok = JSON.createObjectNode();
            ok.put("simple", d.isSimpleConsumerGroup());
            ok.put("state", d.state().name());
            ok.put("assignor", d.partitionAssignor());
            ok.set("coordinator", node(d.coordinator()));
            ArrayNode members = ok.putArray("members");
            for (MemberDescription m : d.members()) {
                ArrayNode row = members.addArray().add(m.consumerId()).add(m.clientId()).add(m.host())
                    .add(m.groupInstanceId().orElse(null));
                ArrayNode assigned = row.addArray();
                m.assignment().topicPartitions().forEach(tp -> assigned.addArray().add(tp.topic()).add(tp.partition()));
            }
            return ok;
        }).toString();
    }

    /** The group's committed offsets: {@code [[topic, partition, offset, metadata]]}. */
    public String listGroupOffsets(String group, int timeoutMs) {
        Map<TopicPartition, OffsetAndMetadata> found = get(admin.listConsumerGroupOffsets(group,
            new ListConsumerGroupOffsetsOptions().timeoutMs(timeoutMs)).partitionsToOffsetAndMetadata(), timeoutMs,
            "reading the offsets of group " + group);
        ArrayNode out = JSON.createArrayNode();
        found.forEach((tp, om) -> {
            if (om != null) {
                out.addArray().add(tp.topic()).add(tp.partition()).add(om.offset()).add(om.metadata());
            }
        });
        return out.toString();
    }

    /** Commit {@code offsets} ({@code [[topic, partition, offset, metadata]]}) for {@code group}, which must have no members. */
    public void alterGroupOffsets(String group, String offsets, int timeoutMs) {
        Map<TopicPartition, OffsetAndMetadata> wanted = new LinkedHashMap<>();
        for (JsonNode row : array(offsets, "offsets")) {
            wanted.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()),
                new OffsetAndMetadata(row.get(2).asLong(), row.size() > 3 && !row.get(3).isNull() ? row.get(3).asText() : ""));
        }
        get(admin.alterConsumerGroupOffsets(group, wanted, new AlterConsumerGroupOffsetsOptions().timeoutMs(timeoutMs)).all(),
            timeoutMs, "committing offsets of group " + group);
    }

    /** Delete each group of {@code groups} (a JSON array), which must have no members; its offsets go with it. */
    public String deleteGroups(String groups, int timeoutMs) {
        List<String> ids = new ArrayList<>();
        array(groups, "groups").forEach(n -> ids.add(n.asText()));
        Map<String, KafkaFuture<Void>> deleted = ids.isEmpty() ? Map.of()
            : admin.deleteConsumerGroups(ids, new DeleteConsumerGroupsOptions().timeoutMs(timeoutMs)).deletedGroups();
        return each(ids, id -> {
            get(deleted.get(id), timeoutMs, "deleting group " + id);
            return JSON.createObjectNode();
        }).toString();
    }

    @Override
    public void close() {
        admin.close(java.time.Duration.ofSeconds(5));
    }

    // ---- JSON forms ----

    static JsonNode node(Node node) {
        if (node == null || node.isEmpty()) {
            return JSON.nullNode();
        }
        return JSON.createArrayNode().add(node.id()).add(node.host()).add(node.port()).add(node.rack());
    }

    static ArrayNode binding(AclBinding b) {
        return JSON.createArrayNode().add(b.pattern().resourceType().name()).add(b.pattern().name())
            .add(b.pattern().patternType().name()).add(b.entry().principal()).add(b.entry().host())
            .add(b.entry().operation().name()).add(b.entry().permissionType().name());
    }

    /** A filter as {@code [resourceType, name|null, patternType, principal|null, host|null, operation, permission]}. */
    static AclBindingFilter filter(JsonNode row) {
        return new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.valueOf(row.get(0).asText()), text(row.get(1)), PatternType.valueOf(row.get(2).asText())),
            new AccessControlEntryFilter(text(row.get(3)), text(row.get(4)), AclOperation.valueOf(row.get(5).asText()),
                AclPermissionType.valueOf(row.get(6).asText())));
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    static ArrayNode error(ClientError e) {
        return JSON.createArrayNode().add(e.code()).add(e.retriable()).add(e.getMessage());
    }

    interface Answer {
        JsonNode of(String key);
    }

    /** An object from each key to {@code {"ok": answer}} or {@code {"error": [code, retriable, text]}}. */
    static ObjectNode each(Collection<String> keys, Answer answer) {
        ObjectNode out = JSON.createObjectNode();
        for (String key : keys) {
            ObjectNode row = out.putObject(key);
            try {
                row.set("ok", answer.of(key));
            } catch (ClientError e) {
                row.set("error", error(e));
            }
        }
        return out;
    }

    static <T> T get(KafkaFuture<T> future, int timeoutMs, String what) {
        try {
            return future.get(timeoutMs + 1000L, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ClientError.of(what, e);
        } catch (Exception e) {
            throw ClientError.of(what, e);
        }
    }

    static JsonNode parse(String text, String what) {
        try {
            JsonNode parsed = JSON.readTree(text);
            if (parsed == null) {
                throw new IllegalArgumentException(what + " is empty");
            }
            return parsed;
        } catch (IOException e) {
            throw new IllegalArgumentException(what + " is not JSON: " + e.getMessage(), e);
        }
    }

    static JsonNode array(String text, String what) {
        JsonNode parsed = parse(text, what);
        if (!parsed.isArray()) {
            throw new IllegalArgumentException(what + " must be a JSON array");
        }
        return parsed;
    }
}
