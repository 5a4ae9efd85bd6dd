package io.mirrorspark.source;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import io.mirrorspark.kafka.Columns;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * mirrorspark's Kafka source: {@code spark.readStream.format("io.mirrorspark.source.MirrorSource")}.
 *
 * Spark's own Kafka source runs one task (and caches one consumer) per partition with new records
 * in each batch, so a full sync of thousands of quiet partitions schedules thousands of tasks. Here
 * each batch's tasks own groups of partitions, balanced by the records each will read, and one
 * consumer reads a whole group, as MM2's tasks do (docs/adr/0010-grouped-source.md). Rows have the
 * schema of Spark's Kafka source with headers, and offsets its JSON, so the rest of the pipeline and
 * existing checkpoints are unchanged. Options: see {@link SourceSettings}.
 */
public final class MirrorSource implements TableProvider {
    static final StructType SCHEMA = new StructType(new StructField[] {
        DataTypes.createStructField("key", DataTypes.BinaryType, true),
        DataTypes.createStructField("value", DataTypes.BinaryType, true),
        DataTypes.createStructField("topic", DataTypes.StringType, true),
        DataTypes.createStructField("partition", DataTypes.IntegerType, true),
        DataTypes.createStructField("offset", DataTypes.LongType, true),
        DataTypes.createStructField("timestamp", DataTypes.TimestampType, true),
        DataTypes.createStructField("timestampType", DataTypes.IntegerType, true),
        DataTypes.createStructField("headers", new ArrayType(new StructType(new StructField[] {
            DataTypes.createStructField("key", DataTypes.StringType, true),
            DataTypes.createStructField("value", DataTypes.BinaryType, true)}), true), true),
    });

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SourceTable();
    }

    private static final class SourceTable implements SupportsRead {
        @Override
        public String name() {
            return "mirrorspark-kafka-source";
        }

        @Override
        public Column[] columns() {
            return Columns.of(SCHEMA);
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.MICRO_BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            SourceSettings settings = new SourceSettings(options.asCaseSensitiveMap());
            return () -> new Scan() {
                @Override
                public StructType readSchema() {
                    return SCHEMA;
                }

                @Override
                public String description() {
                    return "mirrorspark Kafka source (" + settings.pattern + ")";
                }

                @Override
                public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
                    return new GroupedMicroBatchStream(settings, checkpointLocation);
                }
            };
        }
    }
}
