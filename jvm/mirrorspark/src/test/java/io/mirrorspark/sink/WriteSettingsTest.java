package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * The sink's options without Kafka or Spark: each source topic's remote topic, the timestamp's unit
 * taken from the column's type, and bad options refused.
 */
final class WriteSettingsTest {

    private static StructType schema(boolean sparkTimestamp) {
        return new StructType()
            .add("key", DataTypes.BinaryType).add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType).add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("timestamp", sparkTimestamp ? DataTypes.TimestampType : DataTypes.LongType)
            .add("timestampType", DataTypes.IntegerType)
            .add("headers", DataTypes.createArrayType(new StructType()
                .add("key", DataTypes.StringType).add("value", DataTypes.BinaryType)));
    }

    private static Map<String, String> options(String remoteTopics) {
        Map<String, String> options = new HashMap<>();
        options.put("flow", "a->b");
        options.put("kafka.bootstrap.servers", "unused:9092");
        if (remoteTopics != null) {
            options.put("remoteTopics", remoteTopics);
        }
        return options;
    }

    @Test
    void eachSourceTopicHasItsRemoteTopic() {
        WriteSettings renamed = WriteSettings.from(schema(true), options("orders\ta.orders\npayments\ta.payments"));
        assertEquals("a.orders", renamed.remoteTopics.get("orders"), "each source topic's remote topic");
        assertEquals("a.payments", renamed.remoteTopics.get("payments"), "each source topic's remote topic");
        assertNull(renamed.remoteTopics.get("a.orders"), "a topic not planned has none (its rows are skipped)");
        assertTrue(renamed.timestampMicros, "a Kafka source's timestamp column is Spark's (microseconds)");
        assertEquals(2, renamed.topic, "columns found by name");
        assertEquals(4, renamed.offset, "columns found by name");
        assertEquals(7, renamed.headers, "columns found by name");
    }

    @Test
    void withoutAPlanTheTopicColumnNamesTheTarget() {
        WriteSettings plain = WriteSettings.from(schema(false), options(null));
        assertNull(plain.remoteTopics, "no option: the topic column names the target topic");
        assertFalse(plain.timestampMicros, "a long timestamp column is epoch milliseconds");
        assertTrue(WriteSettings.from(schema(true), options("")).remoteTopics.isEmpty(), "an empty plan copies nothing");
    }

    @Test
    void badPlanLinesAreRefused() {
        for (String bad : new String[] {"orders", "orders\t", "\ta.orders", "orders\ta\tb"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WriteSettings.from(schema(true), options(bad)), "refused: " + bad);
            assertTrue(e.getMessage() != null && e.getMessage().contains("'remoteTopics' option has a bad line"),
                "refused: " + bad);
        }
    }
}
