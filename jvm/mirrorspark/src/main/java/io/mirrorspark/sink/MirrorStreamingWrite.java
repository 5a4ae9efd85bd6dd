package io.mirrorspark.sink;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * Driver side of a real-time query's write (docs/adr/0016-real-time-mode.md). Each real-time batch
 * (an epoch) ends with one {@link #commit} carrying every task's report, before Spark records the
 * batch in its offset and commit logs. The commit hands the runs over and waits until the driver's
 * Python has made them durable ({@link WrittenBatches#acceptEpoch}): mirrorspark's state is then
 * never behind Spark's, so a restart knows what the target holds beyond Spark's last batch.
 */
final class MirrorStreamingWrite implements StreamingWrite {
    private final WriteSettings settings;
    private final long driverWaitMs;

    MirrorStreamingWrite(WriteSettings settings, long driverWaitMs) {
        this.settings = settings;
        this.driverWaitMs = driverWaitMs;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        return new WriterFactory(settings);
    }

    /** Shipped to executors: only the settings travel. */
    private static final class WriterFactory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final WriteSettings settings;

        WriterFactory(WriteSettings settings) {
            this.settings = settings;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            // Only the first epoch after a start resumes what an interrupted run wrote; later ones
            // begin where it ended.
            return new MirrorDataWriter(settings, settings.resumeEpoch < 0 || settings.resumeEpoch == epochId);
        }
    }

    @Override
    public boolean useCommitCoordinator() {
        return true;
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        WrittenBatches.acceptEpoch(settings.flow, epochId, messages, driverWaitMs);
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        // Not recorded: Spark replays the epoch from its last batch, and the restart compares with the target.
    }
}
