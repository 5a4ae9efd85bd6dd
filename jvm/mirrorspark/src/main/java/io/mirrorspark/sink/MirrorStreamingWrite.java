package io.mirrorspark.sink;

import java.util.HashMap;

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
    /** What is left to compare of an interrupted run's target records, epoch after epoch. */
    private final ResumeLedger ledger;

    /** {@code resumeLater}: the first batch waits for its ranges from the driver ({@link ResumeRanges}),
     *  given after the query started, instead of the {@code resume} option. */
    MirrorStreamingWrite(WriteSettings settings, long driverWaitMs, boolean resumeLater) {
        this.settings = settings;
        this.driverWaitMs = driverWaitMs;
        this.ledger = resumeLater ? ResumeLedger.given(settings.flow, settings.resumeRun, driverWaitMs)
            : ResumeLedger.of(settings.flow, settings.resumeRun, settings.resume);
        Transactions.fenceEarlier(settings);  // exactly-once: once per start, before its first batch's tasks write
    }

    /** Called for each real-time batch once the one before it committed: its writers compare with what is left. */
    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        return new WriterFactory(settings, ledger.left(), ledger.batchStarts());
    }

    /** Shipped to executors: the settings, the ranges left to compare and where the batch's writes begin travel. */
    private static final class WriterFactory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final WriteSettings settings;
        private final HashMap<String, long[]> resume;
        private final HashMap<String, Long> batchStarts;

        WriterFactory(WriteSettings settings, HashMap<String, long[]> resume, HashMap<String, Long> batchStarts) {
            this.settings = settings;
            this.resume = resume;
            this.batchStarts = batchStarts;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            // The replay of an interrupted run can span several batches (each is bounded by time, not
            // rows): each compares from where the batches before it stopped, until every range is passed.
            // A task attempt run again within the batch compares from where the batch's writes began.
            return new MirrorDataWriter(settings, resume, batchStarts, epochId);
        }
    }

    @Override
    public boolean useCommitCoordinator() {
        return true;
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        // Exactly-once: a retried attempt resumes from its transactions' progress; an aborted one's
        // records lie past the starts too, never to be compared.
        ledger.advance(messages, settings.exactlyOnce ? null : keys -> TargetTail.ends(settings.producer, keys));
        WrittenBatches.acceptEpoch(settings.flow, epochId, messages, driverWaitMs);
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        // Not recorded: Spark replays the epoch from its last batch, and the restart compares with the target.
    }
}
