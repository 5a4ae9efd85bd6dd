package io.mirrorspark.sink;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import io.mirrorspark.kafka.Columns;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The replication writer: a DataSource V2 sink used from {@code foreachBatch} as
 * {@code df.write.format("io.mirrorspark.sink.MirrorSink").mode("append")}, and as the streaming
 * sink of a real-time query ({@link MirrorStreamingWrite}).
 *
 * Unlike Spark's built-in Kafka sink it sets each record's timestamp directly and pairs every
 * source offset with the target offset it was acknowledged at, in a per-send callback. Each task
 * returns its pairs (as runs) and its figures in its commit message; the driver receives the
 * messages of the committed task attempts in {@link MirrorBatchWrite#commit} before the batch is
 * committed, wherever the executors run (docs/adr/0004-cluster-writer.md).
 *
 * Input columns: {@code topic} (string), {@code partition} (int), {@code key}, {@code value}
 * (binary), {@code headers} (array of struct key string, value binary), {@code timestamp}
 * (long, epoch millis, or Spark's timestamp), {@code offset} (long, the source offset): a Kafka
 * source's rows as they come. Other columns are ignored. Options: {@code flow} (name the driver
 * drains runs under), {@code kafka.*} producer settings, and {@code remoteTopics} (each source
 * topic's remote topic; without it the topic column names the target topic).
 */
public final class MirrorSink implements TableProvider {

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        throw new UnsupportedOperationException("the mirrorspark sink only writes; it takes the DataFrame's schema");
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SinkTable(schema);
    }

    private static final class SinkTable implements SupportsWrite {
        private final StructType schema;

        SinkTable(StructType schema) {
            this.schema = schema;
        }

        @Override
        public String name() {
            return "mirrorspark-kafka";
        }

        @Override
        public Column[] columns() {
            return Columns.of(schema);
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.STREAMING_WRITE);
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            WriteSettings settings = WriteSettings.from(info.schema(), info.options().asCaseSensitiveMap());
            long driverWaitMs = Long.parseLong(info.options().getOrDefault("driverWaitMs", "120000"));
            boolean resumeLater = "true".equals(info.options().get("resumeLater"));
            // Real-time mode runs in Spark's update output mode: each row is one record appended.
            return new SupportsStreamingUpdateAsAppend() {
                @Override
                public Write build() {
                    return new Write() {
                        @Override
                        public BatchWrite toBatch() {
                            return new MirrorBatchWrite(settings);
                        }

                        @Override
                        public StreamingWrite toStreaming() {
                            return new MirrorStreamingWrite(settings, driverWaitMs, resumeLater);
                        }
                    };
                }
            };
        }
    }
}
