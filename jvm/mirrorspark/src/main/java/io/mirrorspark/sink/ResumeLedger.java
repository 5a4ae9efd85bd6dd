package io.mirrorspark.sink;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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
    /** Per flow, the ledger of its running query: Spark builds the write anew for every batch. */
    private static final ConcurrentHashMap<String, ResumeLedger> RUNNING = new ConcurrentHashMap<>();

    private final String run;
    private final HashMap<String, long[]> pending = new HashMap<>();

    ResumeLedger(String run, Map<String, long[]> ranges) {
        this.run = run;
        for (Map.Entry<String, long[]> e : ranges.entrySet()) {
            pending.put(e.getKey(), e.getValue().clone());
        }
    }

    /**
     * The ledger of {@code flow}'s query started as {@code run} (the sink's option {@code resumeRun},
     * new at each start of the query): the one its earlier batches advanced, or a new one from
     * {@code ranges} at the query's first batch. Spark creates the streaming write again for each
     * batch (micro-batch planning), so the ledger cannot live in it.
     */
    static ResumeLedger of(String flow, String run, Map<String, long[]> ranges) {
        return RUNNING.compute(flow, (f, held) -> held != null && held.run.equals(run) ? held
            : new ResumeLedger(run, ranges));
    }

    /**
     * {@link #of} with the ranges the driver gives after the query started ({@link ResumeRanges}),
     * waited for at the query's first batch only, for up to {@code waitMs}.
     */
    static ResumeLedger given(String flow, String run, long waitMs) {
        if (run.isEmpty()) {
            throw new IllegalArgumentException("the mirrorspark sink's 'resumeLater' option needs 'resumeRun'");
        }
        ResumeLedger held = RUNNING.get(flow);
        if (held != null && held.run.equals(run)) {
            return held;
        }
        return of(flow, run, ResumeRanges.await(run, waitMs));
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
