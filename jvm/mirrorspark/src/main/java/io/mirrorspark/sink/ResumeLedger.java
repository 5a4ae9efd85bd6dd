package io.mirrorspark.sink;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.mirrorspark.kafka.OffsetRunList;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver side of a real-time query: the target records of an interrupted run still to compare with
 * the replay, per target partition {@code [next, end)}. A real-time batch is bounded by time, so
 * the replay may take several; after each commit a partition whose rows all matched carries on
 * from its next offset in the following batch, and one whose comparison ended (a row differed, or
 * the range was passed) leaves the ledger. Without it the rows of the later batches were sent
 * again uncounted (docs/adr/0016-real-time-mode.md).
 *
 * <p>It also keeps where the next batch's writes begin on each target partition: this start's
 * beginning, then the end of what each committed batch wrote there. A task attempt Spark runs again
 * within a batch (its executor lost) compares from there with what the target holds, so what the
 * lost attempt wrote is paired, not sent again (docs/adr/0027-grouped-source-real-time.md, section 16).
 * A retried attempt can also begin after its batch's time is up and read nothing: what the lost
 * attempt wrote then lies past every report, so a batch with a retried attempt asks the target's
 * ends, and the next batches compare what lies past the ledger's starts (section 17).
 */
final class ResumeLedger {
    private static final Logger LOG = LoggerFactory.getLogger(ResumeLedger.class);
    /** Per flow, the ledger of its running query: Spark builds the write anew for every batch. */
    private static final ConcurrentHashMap<String, ResumeLedger> RUNNING = new ConcurrentHashMap<>();

    /** Where target partitions ({@link WriteSettings#key} keys) end now: one request to the target. */
    @FunctionalInterface
    interface TargetEnds {
        Map<String, Long> of(Collection<String> keys);
    }

    private final String flow;
    private final String run;
    private final HashMap<String, long[]> pending = new HashMap<>();
    private final HashMap<String, Long> batchStart;

    ResumeLedger(String run, Map<String, long[]> ranges) {
        this(run, ranges, Map.of());
    }

    ResumeLedger(String run, Map<String, long[]> ranges, Map<String, Long> starts) {
        this("", run, ranges, starts);
    }

    ResumeLedger(String flow, String run, Map<String, long[]> ranges, Map<String, Long> starts) {
        this.flow = flow;
        this.run = run;
        for (Map.Entry<String, long[]> e : ranges.entrySet()) {
            pending.put(e.getKey(), e.getValue().clone());
        }
        this.batchStart = new HashMap<>(starts);
    }

    /**
     * The ledger of {@code flow}'s query started as {@code run} (the sink's option {@code resumeRun},
     * new at each start of the query): the one its earlier batches advanced, or a new one from
     * {@code ranges} at the query's first batch. Spark creates the streaming write again for each
     * batch (micro-batch planning), so the ledger cannot live in it.
     */
    static ResumeLedger of(String flow, String run, Map<String, long[]> ranges) {
        return of(flow, run, ranges, Map.of());
    }

    /** {@link #of(String, String, Map)} with where this start's writes begin ({@code starts}, per target partition). */
    static ResumeLedger of(String flow, String run, Map<String, long[]> ranges, Map<String, Long> starts) {
        return RUNNING.compute(flow, (f, held) -> held != null && held.run.equals(run) ? held
            : new ResumeLedger(f, run, ranges, starts));
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
        ResumeRanges.Given given = ResumeRanges.await(run, waitMs);
        return of(flow, run, given.ranges(), given.retryFrom());
    }

    /** The ranges left, as the next batch's writers take them (a copy: they travel to executors). */
    synchronized HashMap<String, long[]> left() {
        HashMap<String, long[]> out = new HashMap<>();
        for (Map.Entry<String, long[]> e : pending.entrySet()) {
            out.put(e.getKey(), e.getValue().clone());
        }
        return out;
    }

    /** Where the next batch's writes begin on each target partition known (a copy: it travels to executors). */
    synchronized HashMap<String, Long> batchStarts() {
        return new HashMap<>(batchStart);
    }

    /**
     * A batch committed: its tasks' reports say how far each partition's comparison got, and where on
     * the target each partition they wrote ends now. {@code ends}: asked only when a report comes from
     * a retried task attempt (null: never asked).
     */
    synchronized void advance(WriterCommitMessage[] messages, TargetEnds ends) {
        boolean retried = false;
        for (WriterCommitMessage message : messages) {
            if (message instanceof TaskReport report) {
                retried |= report.retried;
                for (PartitionAcks target : report.partitions) {
                    long end = writtenEnd(target.runs());
                    if (end >= 0) {
                        batchStart.merge(WriteSettings.key(target.topic, target.partition), end, Math::max);
                    }
                }
            }
        }
        if (!pending.isEmpty()) {
            advancePending(messages);
        }
        if (retried && ends != null) {
            comparePastStarts(ends.of(batchStart.keySet()));
        }
    }

    private void advancePending(WriterCommitMessage[] messages) {
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

    /**
     * Target records past a partition's start ({@code now}: the partitions' ends) were written by an
     * attempt no report covers: the next batches' writers compare them with their rows, as a replay's.
     */
    private void comparePastStarts(Map<String, Long> now) {
        int partitions = 0;
        long records = 0;
        for (Map.Entry<String, Long> start : batchStart.entrySet()) {
            Long end = now.get(start.getKey());
            if (end == null || end <= start.getValue()) {
                continue;
            }
            long[] held = pending.get(start.getKey());
            long from = held == null ? start.getValue() : Math.min(held[0], start.getValue());
            long to = held == null ? end : Math.max(held[1], end);
            pending.put(start.getKey(), new long[] {from, to});
            partitions++;
            records += end - start.getValue();
        }
        if (partitions > 0) {
            LOG.warn("flow {}: a real-time batch had a task attempt run again (an executor lost): {} target record(s) "
                + "on {} partition(s) lie past what its tasks reported, and are compared with the next batches' rows "
                + "before anything is sent again", flow, records, partitions);
        }
    }

    /** The target offset after the last record a batch's runs hold (paired or sent); -1: none. */
    static long writtenEnd(OffsetRunList runs) {
        long end = -1L;
        for (int i = 0; i < runs.size(); i++) {
            if (!runs.isBreak(i)) {
                end = Math.max(end, runs.targetStart(i) + runs.count(i));
            }
        }
        return end;
    }
}
