package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.junit.jupiter.api.Test;

/** MM2's transforms as the sink applies them: Kafka's own transformations and predicates, no broker. */
final class TransformsTest {

    private static byte[] b(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static RecordHeaders headers(String... keys) {
        RecordHeaders out = new RecordHeaders();
        for (String key : keys) {
            out.add(key, b("v-" + key));
        }
        return out;
    }

    @Test
    void noTransformsListedMeansNoChain() {
        assertNull(Transforms.of(null));
        assertNull(Transforms.of(Map.of("transforms", " ")));
    }

    @Test
    void aPredicateGuardsAFilterAndAnotherStageDropsAHeader() {
        Transforms chain = Transforms.of(Map.of(
            "transforms", "dropSecret, onlyOrders",
            "transforms.dropSecret.type", "org.apache.kafka.connect.transforms.DropHeaders",
            "transforms.dropSecret.headers", "secret",
            "transforms.onlyOrders.type", "org.apache.kafka.connect.transforms.Filter",
            "transforms.onlyOrders.predicate", "tombstone",
            "predicates", "tombstone",
            "predicates.tombstone.type", "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"));
        assertNotNull(chain);
        Transforms.Result kept = chain.apply("primary.orders", 2, b("k"), b("v"), 1234L, headers("secret", "trace"));
        assertNotNull(kept);
        assertArrayEquals(b("k"), kept.key());
        assertArrayEquals(b("v"), kept.value());
        assertEquals(1234L, kept.timestamp());
        assertNull(kept.headers().lastHeader("secret"));
        assertArrayEquals(b("v-trace"), kept.headers().lastHeader("trace").value());
        assertNull(chain.apply("primary.orders", 2, b("k"), null, 1234L, headers()));  // a tombstone: filtered
        chain.close();
    }

    @Test
    void negateAppliesTheStageWhereThePredicateIsFalse() {
        Transforms chain = Transforms.of(Map.of(
            "transforms", "keepOrders",
            "transforms.keepOrders.type", "org.apache.kafka.connect.transforms.Filter",
            "transforms.keepOrders.predicate", "isOrders",
            "transforms.keepOrders.negate", "true",
            "predicates", "isOrders",
            "predicates.isOrders.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.isOrders.pattern", ".*orders"));
        assertNotNull(chain.apply("primary.orders", 0, null, b("v"), -1L, headers()));
        assertNull(chain.apply("primary.payments", 0, null, b("v"), -1L, headers()));
    }

    /** A transformation that renames the topic, as RegexRouter does. */
    public static final class Rename implements Transformation<SourceRecord> {
        @Override
        public SourceRecord apply(SourceRecord record) {
            return record.newRecord("renamed", record.kafkaPartition(), record.keySchema(), record.key(),
                record.valueSchema(), record.value(), record.timestamp());
        }

        @Override
        public ConfigDef config() {
            return new ConfigDef();
        }

        @Override
        public void close() { }

        @Override
        public void configure(Map<String, ?> configs) { }
    }

    @Test
    void aRecordMovedToAnotherTopicOrMadeNonBytesStopsTheTask() {
        Transforms rename = Transforms.of(Map.of("transforms", "r", "transforms.r.type", Rename.class.getName()));
        IllegalStateException moved = assertThrows(IllegalStateException.class,
            () -> rename.apply("primary.orders", 0, null, b("v"), -1L, headers()));
        assertTrue(moved.getMessage().contains("transforms.r moved a record of primary.orders[0] to renamed[0]"));
        Transforms literal = Transforms.of(Map.of("transforms", "h",
            "transforms.h.type", "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.h.header", "origin", "transforms.h.value.literal", "dc1"));
        IllegalStateException text = assertThrows(IllegalStateException.class,
            () -> literal.apply("primary.orders", 0, null, b("v"), -1L, headers()));
        assertTrue(text.getMessage().contains("header origin is a String after transforms"), text.getMessage());
        Transforms asText = Transforms.of(Map.of("transforms", "h",
            "transforms.h.type", "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.h.header", "origin", "transforms.h.value.literal", "dc1",
            "header.converter", "org.apache.kafka.connect.storage.StringConverter"));
        Transforms.Result marked = asText.apply("primary.orders", 0, null, b("v"), -1L, headers("trace"));
        assertArrayEquals(b("dc1"), marked.headers().lastHeader("origin").value());
        assertArrayEquals(b("v-trace"), marked.headers().lastHeader("trace").value());  // bytes stay bytes
    }

    @Test
    void aChainThatCannotBeMadeIsRefusedNamingTheKey() {
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> Transforms.of(Map.of("transforms", "x")));
        assertEquals("transforms.x.type is required", missing.getMessage());
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
            () -> Transforms.of(Map.of("transforms", "x", "transforms.x.type", "com.example.Nope")));
        assertTrue(unknown.getMessage().startsWith("transforms.x.type com.example.Nope cannot be loaded"));
        IllegalArgumentException guard = assertThrows(IllegalArgumentException.class,
            () -> Transforms.of(Map.of("transforms", "x",
                "transforms.x.type", "org.apache.kafka.connect.transforms.Filter", "transforms.x.predicate", "p")));
        assertTrue(guard.getMessage().contains("predicate names 'p', which predicates does not list"));
    }
}
