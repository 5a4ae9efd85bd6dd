package io.mirrorspark.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsOptions;
import org.apache.kafka.clients.admin.DeleteShareGroupsOptions;
import org.apache.kafka.clients.admin.DescribeShareGroupsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Share groups (KIP-932) through an {@link AdminBridge}'s client, for {@code promote}: their members
 * (a group still consuming on the side it leaves is waited for), their start offsets on the source,
 * and the translated ones committed on the target. Answers cross py4j as JSON text, as the bridge's do;
 * offsets come in as JSON too, because py4j would hand a small offset over as an Integer where Kafka
 * wants a Long.
 */
public final class ShareGroupAdmin {
    private final Admin admin;

    public ShareGroupAdmin(AdminBridge bridge) {
        this.admin = bridge.admin();
    }

    /** Every share group of the cluster: {@code [[id, state]]}. */
    public String list(int timeoutMs) {
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        for (GroupListing g : AdminBridge.get(admin.listGroups(ListGroupsOptions.forShareGroups().timeoutMs(timeoutMs))
                .all(), timeoutMs, "listing share groups")) {
            out.addArray().add(g.groupId()).add(g.groupState().map(Enum::name).orElse("UNKNOWN"));
        }
        return out.toString();
    }

    /**
     * Each group of {@code groups} (a JSON array): {@code {"state", "members": [[memberId, clientId, host,
     * [[topic, partition]]]]}}, or its error.
     */
    public String describe(String groups, int timeoutMs) {
        List<String> ids = ids(groups);
        Map<String, KafkaFuture<ShareGroupDescription>> described = ids.isEmpty() ? Map.of()
            : admin.describeShareGroups(ids, new DescribeShareGroupsOptions().timeoutMs(timeoutMs)).describedGroups();
        return AdminBridge.each(ids, id -> {
            ShareGroupDescription d = AdminBridge.get(described.get(id), timeoutMs, "describing share group " + id);
            ObjectNode ok = AdminBridge.JSON.createObjectNode();
            ok.put("state", d.groupState().name());
            ArrayNode members = ok.putArray("members");
            for (ShareMemberDescription m : d.members()) {
                ArrayNode assigned = members.addArray().add(m.consumerId()).add(m.clientId()).add(m.host()).addArray();
                m.assignment().topicPartitions().forEach(tp -> assigned.addArray().add(tp.topic()).add(tp.partition()));
            }
            return ok;
        }).toString();
    }

    /**
     * The group's start offsets (below each one, every record was delivered and acknowledged) and lags
     * (records up to the partition's end not yet acknowledged; null where the broker does not say):
     * {@code [[topic, partition, offset, lag]]}; partitions where it has none are left out. Kafka moves
     * the stored start offset lazily, so a group that acknowledged everything may show an old start
     * offset with a lag of 0.
     */
    public String startOffsets(String group, int timeoutMs) {
        Map<String, ListShareGroupOffsetsSpec> spec = Map.of(group, new ListShareGroupOffsetsSpec());
        Map<TopicPartition, SharePartitionOffsetInfo> found = AdminBridge.get(admin.listShareGroupOffsets(spec,
            new ListShareGroupOffsetsOptions().timeoutMs(timeoutMs)).partitionsToOffsetInfo(group), timeoutMs,
            "reading the start offsets of share group " + group);
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        found.forEach((tp, info) -> {
            if (info != null && info.startOffset() >= 0) {
                out.addArray().add(tp.topic()).add(tp.partition()).add(info.startOffset()).add(info.lag().orElse(null));
            }
        });
        return out.toString();
    }

    /** Set the start offsets {@code [[topic, partition, offset]]} of {@code group}, which must have no members. */
    public void alterStartOffsets(String group, String offsets, int timeoutMs) {
        AdminBridge.get(admin.alterShareGroupOffsets(group, offsets(offsets),
            new AlterShareGroupOffsetsOptions().timeoutMs(timeoutMs)).all(), timeoutMs,
            "setting the start offsets of share group " + group);
    }

    /** Delete each group of {@code groups} (a JSON array), which must have no members. */
    public String delete(String groups, int timeoutMs) {
        List<String> ids = ids(groups);
        Map<String, KafkaFuture<Void>> deleted = ids.isEmpty() ? Map.of()
            : admin.deleteShareGroups(ids, new DeleteShareGroupsOptions().timeoutMs(timeoutMs)).deletedGroups();
        return AdminBridge.each(ids, id -> {
            AdminBridge.get(deleted.get(id), timeoutMs, "deleting share group " + id);
            return AdminBridge.JSON.createObjectNode();
        }).toString();
    }

    static List<String> ids(String groups) {
        List<String> ids = new ArrayList<>();
        AdminBridge.array(groups, "groups").forEach(n -> ids.add(n.asText()));
        return ids;
    }

    /** {@code [[topic, partition, offset]]} as Kafka's map; a row of another shape is refused, naming it. */
    static Map<TopicPartition, Long> offsets(String rows) {
        Map<TopicPartition, Long> out = new LinkedHashMap<>();
        for (JsonNode row : AdminBridge.array(rows, "offsets")) {
            if (!row.isArray() || row.size() != 3 || !row.get(0).isTextual() || !row.get(1).canConvertToInt()
                    || !row.get(2).canConvertToLong() || row.get(2).asLong() < 0) {
                throw new IllegalArgumentException("offsets: " + row + " is not [topic, partition, offset >= 0]");
            }
            out.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()), row.get(2).asLong());
        }
        return out;
    }
}
