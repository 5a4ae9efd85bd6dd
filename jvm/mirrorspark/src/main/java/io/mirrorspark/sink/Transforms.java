package io.mirrorspark.sink;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * The flow's Connect transformations ({@code transforms}, {@code predicates}), applied to each record
 * as MM2's Connect worker applies them to its source records: the record as MM2's source task makes
 * it (the remote topic, the source partition, key and value as optional bytes, the timestamp, the
 * headers as bytes), each stage in order, a stage guarded by its predicate (and {@code negate}), a
 * null result dropping the record; then MM2's ByteArrayConverter for key, value and headers. A
 * transformation that moves the record to another topic or partition is refused: remote names are
 * the replication policy's, and offset translation pairs source and target partitions.
 */
final class Transforms implements AutoCloseable {
    /** The record after the chain: what the producer sends. */
    record Result(byte[] key, byte[] value, Long timestamp, RecordHeaders headers) { }

    private record Stage(String name, Transformation<SourceRecord> transformation, Predicate<SourceRecord> predicate,
                         boolean negate) { }

    private final List<Stage> stages;
    private final List<Predicate<SourceRecord>> predicates;
    /** Per part ({@code key}, {@code value}, {@code header}): its converter writes text (StringConverter,
     *  SimpleHeaderConverter), so a String a transformation made is written as UTF-8. */
    private final Map<String, Boolean> text;

    private Transforms(List<Stage> stages, List<Predicate<SourceRecord>> predicates, Map<String, Boolean> text) {
        this.stages = stages;
        this.predicates = predicates;
        this.text = text;
    }

    private static boolean writesText(Map<String, String> config, String part) {
        String converter = config.getOrDefault(part + ".converter", "").trim();
        return converter.endsWith(".StringConverter") || converter.endsWith(".SimpleHeaderConverter");
    }

    /** The chain the settings describe (keys {@code transforms}, {@code transforms.<name>.*},
     *  {@code predicates}, {@code predicates.<name>.*}); null when {@code transforms} lists none. */
    static Transforms of(Map<String, String> config) {
        List<String> names = names(config == null ? null : config.get("transforms"));
        if (names.isEmpty()) {
            return null;
        }
        Map<String, Predicate<SourceRecord>> byName = new LinkedHashMap<>();
        for (String name : names(config.get("predicates"))) {
            Predicate<SourceRecord> predicate = instance("predicates." + name, config, Predicate.class);
            predicate.configure(subConfig(config, "predicates." + name + "."));
            byName.put(name, predicate);
        }
        List<Stage> stages = new ArrayList<>();
        for (String name : names) {
            String prefix = "transforms." + name + ".";
            Transformation<SourceRecord> transformation = instance("transforms." + name, config, Transformation.class);
            transformation.configure(subConfig(config, prefix));
            String guard = config.get(prefix + "predicate");
            Predicate<SourceRecord> predicate = null;
            if (guard != null && !guard.isBlank()) {
                predicate = byName.get(guard.trim());
                if (predicate == null) {
                    throw new IllegalArgumentException(prefix + "predicate names '" + guard.trim()
                        + "', which predicates does not list");
                }
            }
            boolean negate = Boolean.parseBoolean(config.getOrDefault(prefix + "negate", "false").trim());
            stages.add(new Stage(name, transformation, predicate, negate));
        }
        Map<String, Boolean> text = Map.of("key", writesText(config, "key"), "value", writesText(config, "value"),
            "header", writesText(config, "header"));
        return new Transforms(stages, new ArrayList<>(byName.values()), text);
    }

    private static List<String> names(String list) {
        List<String> out = new ArrayList<>();
        if (list != null) {
            for (String name : list.split(",")) {
                if (!name.isBlank()) {
                    out.add(name.trim());
                }
            }
        }
        return out;
    }

    /** The keys under {@code prefix}, without it and without the chain's own ({@code type}, {@code predicate},
     *  {@code negate}): what the class's {@code configure} gets, as Connect gives it. */
    private static Map<String, String> subConfig(Map<String, String> config, String prefix) {
        Map<String, String> out = new HashMap<>();
        for (Map.Entry<String, String> e : config.entrySet()) {
            if (e.getKey().startsWith(prefix)) {
                String key = e.getKey().substring(prefix.length());
                if (!key.equals("type") && !key.equals("predicate") && !key.equals("negate")) {
                    out.put(key, e.getValue());
                }
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static <T> T instance(String where, Map<String, String> config, Class<?> kind) {
        String type = config.get(where + ".type");
        if (type == null || type.isBlank()) {
            throw new IllegalArgumentException(where + ".type is required");
        }
        try {
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            Class<?> found = Class.forName(type.trim(), true, loader == null ? Transforms.class.getClassLoader() : loader);
            if (!kind.isAssignableFrom(found)) {
                throw new IllegalArgumentException(where + ".type " + type.trim() + " is not a " + kind.getSimpleName());
            }
            return (T) found.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException(where + ".type " + type.trim() + " cannot be loaded: " + e, e);
        }
    }

    /** The record after the chain, or null when a stage dropped it. */
    Result apply(String topic, int partition, byte[] key, byte[] value, long timestamp, RecordHeaders headers) {
        ConnectHeaders connect = new ConnectHeaders();
        for (org.apache.kafka.common.header.Header h : headers) {
            connect.addBytes(h.key(), h.value());
        }
        SourceRecord record = new SourceRecord(null, null, topic, partition, Schema.OPTIONAL_BYTES_SCHEMA, key,
            Schema.OPTIONAL_BYTES_SCHEMA, value, timestamp < 0 ? null : timestamp, connect);
        for (Stage stage : stages) {
            if (stage.predicate != null && stage.predicate.test(record) == stage.negate) {
                continue;
            }
            record = stage.transformation.apply(record);
            if (record == null) {
                return null;
            }
            if (!topic.equals(record.topic()) || record.kafkaPartition() == null || record.kafkaPartition() != partition) {
                throw new IllegalStateException("transforms." + stage.name + " moved a record of " + topic + "["
                    + partition + "] to " + record.topic() + "[" + record.kafkaPartition() + "]: remote topic names "
                    + "are the replication policy's (or topic.map's), and offset translation pairs each source "
                    + "partition with its remote partition");
            }
        }
        String last = stages.get(stages.size() - 1).name;
        RecordHeaders out = new RecordHeaders();
        for (Header h : record.headers()) {
            out.add(h.key(), bytes(h.value(), "header " + h.key(), last, text.get("header")));
        }
        return new Result(bytes(record.key(), "the key", last, text.get("key")),
            bytes(record.value(), "the value", last, text.get("value")), record.timestamp(), out);
    }

    /** MM2's ByteArrayConverter: bytes (or a ByteBuffer) and null only; with a text converter also a
     *  String, Number or Boolean, as UTF-8 text. Bytes stay bytes whatever the converter: StringConverter
     *  would write a Java array's name where the source had bytes. */
    private static byte[] bytes(Object value, String what, String stage, boolean text) {
        if (value == null || value instanceof byte[]) {
            return (byte[]) value;
        }
        if (text && (value instanceof String || value instanceof Number || value instanceof Boolean)) {
            return value.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        if (value instanceof ByteBuffer buffer) {
            byte[] out = new byte[buffer.remaining()];
            buffer.duplicate().get(out);
            return out;
        }
        throw new IllegalStateException(what + " is a " + value.getClass().getSimpleName() + " after transforms ("
            + "last: " + stage + "): MM2's ByteArrayConverter takes bytes only (a header.converter, key.converter or "
            + "value.converter of Kafka's StringConverter writes text)");
    }

    @Override
    public void close() {
        for (Stage stage : stages) {
            stage.transformation.close();
        }
        for (Predicate<SourceRecord> predicate : predicates) {
            predicate.close();
        }
    }
}
