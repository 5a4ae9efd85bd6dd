package io.mirrorspark.sink;

import java.util.List;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What one committed task wrote: its executor and, per target partition, runs and figures. */
final class TaskReport implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;

    final String executor;
    final List<PartitionAcks> partitions;
    /** Written by a task attempt Spark ran again: an earlier attempt may have written past its report. */
    final boolean retried;

    TaskReport(String executor, List<PartitionAcks> partitions) {
        this(executor, partitions, false);
    }

    TaskReport(String executor, List<PartitionAcks> partitions, boolean retried) {
        this.executor = executor;
        this.partitions = partitions;
        this.retried = retried;
    }
}
