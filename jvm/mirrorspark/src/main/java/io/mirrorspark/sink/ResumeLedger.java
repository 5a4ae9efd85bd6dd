package io.mirrorspark.sink;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * Driver side of a real-time query: the target records of an interrupted run still to compare with
 * the replay, per target partition {@code [next, end)}. A real-time batch is bounded by time, so
 * the replay may take several; after each commit a partition whose rows all matched carries on
 * from its next offset in the following batch, and one whose comparison ended (a row differed, or
 * the range was passed) leaves the ledger. Without it the rows of the later batches were sent
 * again uncounted (docs/adr/0016-real-time-mode.md).
 */
final class ResumeLedger {
    private final HashMap<String, long[]> pending = new HashMap<>();

    ResumeLedger(Map<String, long[]> ranges) {
        for (Map.Entry<String, long[]> e : ranges.entrySet()) {
            pending.put(e.getKey(), e.getValue().clone());
        }
    }

    /** The ranges left, as the next batch's writers take them (a copy: they travel to executors). */
    synchronized HashMap<String, long[]> left() {
        HashMap<String, long[]> out = new HashMap<>();
        for (Map.Entry<String, long[]> e : pending.entrySet()) {
            out.put(e.getKey(), e.getValue().clone());
        }
        return out;
    }

    /** A batch committed: its tasks' reports say how far each partition's comparison got. */
    synchronized void advance(WriterCommitMessage[] messages) {
        if (pending.isEmpty()) {
            return;
        }
        for (WriterCommitMessage message : messages) {
            if (!(message instanceof TaskReport report)) {
                continue;
            }
            for (PartitionAcks target : report.partitions) {
                String key = WriteSettings.key(target.topic, target.partition);
                long[] range = pending.get(key);
                if (range == null) {
                    continue;
                }
                if (target.resumeNext >= range[0] && target.resumeNext < range[1]) {
                    pending.put(key, new long[] {target.resumeNext, range[1]});
                } else {
                    pending.remove(key);
                }
            }
        }
    }
}
