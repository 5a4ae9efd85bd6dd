package io.mirrorspark.sink;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Driver side of one batch's write. Spark calls {@link #commit} with the message of every task
 * attempt its commit coordinator let commit (one per input partition), after all tasks succeeded
 * and before {@code save()} returns to the foreachBatch function: the runs are then handed to
 * the driver-side stores, from which Python drains them and makes them durable before the
 * streaming batch is committed.
 */
final class MirrorBatchWrite implements BatchWrite {
    private final WriteSettings settings;

    MirrorBatchWrite(WriteSettings settings) {
        this.settings = settings;
        Transactions.fenceEarlier(settings);  // exactly-once: once per start, before its first batch's tasks write
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new WriterFactory(settings);
    }

    /** Shipped to executors: only the settings travel, never this driver-side object. */
    private static final class WriterFactory implements DataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final WriteSettings settings;

        WriterFactory(WriteSettings settings) {
            this.settings = settings;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new MirrorDataWriter(settings);
        }
    }

    @Override
    public boolean useCommitCoordinator() {
        return true;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        WrittenBatches.accept(settings.flow, messages);
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        // Nothing is reported: the batch fails, is not committed by Spark, and is written again
        // on retry or restart; runs of that rewrite replace whatever these tasks wrote.
    }
}
