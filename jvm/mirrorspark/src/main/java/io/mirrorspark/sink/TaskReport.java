package io.mirrorspark.sink;

import java.util.List;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What one committed task wrote: its executor and, per target partition, runs and figures. */
final class TaskReport implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;

    final String executor;
    final List<PartitionAcks> partitions;

    TaskReport(String executor, List<PartitionAcks> partitions) {
        this.executor = executor;
        this.partitions = partitions;
    }
}
