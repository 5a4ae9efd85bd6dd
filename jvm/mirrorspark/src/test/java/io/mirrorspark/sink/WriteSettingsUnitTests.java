package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import java.util.HashMap;
import java.util.Map;

import io.mirrorspark.UnitChecks;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The sink's options without Kafka or Spark: each source topic's remote topic, the timestamp's unit
 * taken from the column's type, and bad options refused. Run by tests/unit/test_jvm_units.py.
 */
public final class WriteSettingsUnitTests {
    private WriteSettingsUnitTests() {
    }

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

    public static void main(String[] args) {
        WriteSettings renamed = WriteSettings.from(schema(true), options("orders\ta.orders\npayments\ta.payments"));
        check("a.orders".equals(renamed.remoteTopics.get("orders"))
            && "a.payments".equals(renamed.remoteTopics.get("payments")), "each source topic's remote topic");
        check(renamed.remoteTopics.get("a.orders") == null, "a topic not planned has none (its rows are skipped)");
        check(renamed.timestampMicros, "a Kafka source's timestamp column is Spark's (microseconds)");
        check(renamed.topic == 2 && renamed.offset == 4 && renamed.headers == 7, "columns found by name");

        WriteSettings plain = WriteSettings.from(schema(false), options(null));
        check(plain.remoteTopics == null, "no option: the topic column names the target topic");
        check(!plain.timestampMicros, "a long timestamp column is epoch milliseconds");
        check(WriteSettings.from(schema(true), options("")).remoteTopics.isEmpty(), "an empty plan copies nothing");

        for (String bad : new String[] {"orders", "orders\t", "\ta.orders", "orders\ta\tb"}) {
            String error = null;
            try {
                WriteSettings.from(schema(true), options(bad));
            } catch (IllegalArgumentException e) {
                error = e.getMessage();
            }
            check(error != null && error.contains("'remoteTopics' option has a bad line"), "refused: " + bad);
        }
        UnitChecks.done();
    }
}
