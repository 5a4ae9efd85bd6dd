package io.mirrorspark.source;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/** Shipped to executors with each task; makes the task's reader. */
final class GroupReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final SourceSettings settings;

    GroupReaderFactory(SourceSettings settings) {
        this.settings = settings;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        GroupPartition group = (GroupPartition) partition;
        return new GroupReader(settings, group.ranges, group.realTime);
    }
}
