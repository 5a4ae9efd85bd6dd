package io.mirrorspark.sink;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.mirrorspark.kafka.OffsetRunList;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;

/**
 * One task's transactions, exactly-once mode: one producer for the task (its group of partitions),
 * each transaction holding the task's records since the last one and, committed with them, the
 * flow's progress on each target partition written (the next source offset and the offset pairs).
 * Rows a committed transaction already holds (a batch run again after a crash, a retried task
 * attempt) are paired from the progress, never sent again.
 *
 * <p>A transaction must end well inside the producer's {@code transaction.timeout.ms}, or the broker
 * aborts it and the batch can never finish (a large backlog into a slow or quota-limited target).
 * So the task's transaction is committed mid-batch, with the progress of the rows sent so far,
 * once it has run half that timeout ({@link #budgetMs}) or once what it sent and the target has not
 * acknowledged would not drain in what is left of that half at the task's measured speed
 * ({@link #due}): its last transaction's, or this one's so far when slower.
 *
 * <p>A flush that is still waiting when the transaction has run its whole timeout is cut: the broker
 * aborts the transaction then anyway, and the producer may never finish it by itself (a remote topic
 * deleted after its metadata was read: the producer retries adding the partition to the transaction
 * for ever, and the batch, and a restart waiting for it, would hang). The producer is closed and the
 * task fails, retriably; the batch runs again and skips what committed transactions hold.
 */
final class TaskTransactions {
    /** Records this JVM sent in transactions: where the fault drills' moments are counted from. */
    private static final AtomicLong SENT = new AtomicLong();
    private final WriteSettings settings;
    private final WriterClients clients;
    private final int task;
    /** The batch (a micro-batch's id, a real-time batch's epoch) this task writes. */
    private final long batch;
    /** A retried task attempt: every partition's progress is read from the target, none taken as kept. */
    private final boolean retried;
    private final Map<String, Part> parts = new LinkedHashMap<>();
    /** The task's transaction, made with its producer at the first row. */
    private Open open;

    /** Bytes a transaction may hold before the task's speed is known (its first commit measures it). */
    static final long FIRST_BYTES = 1L << 20;
    /** A transaction's own speed is read once it has run this long, and then at most this often. */
    static final long LIVE_AFTER_MS = 1_000L;
    static final long LIVE_EVERY_MS = 100L;

    /** One target partition of the task: its progress and what this task sent it. */
    static final class Part {
        final PartitionAcks target;
        final String topics;
        Progress progress;
        /** The first source offset past every row this task saw of the partition (-1: none yet). */
        long next = -1L;
        /** Rows of it were sent in the open transaction: its progress is committed with them. */
        boolean dirty;

        Part(PartitionAcks target, Progress progress, String topics) {
            this.target = target;
            this.progress = progress;
            this.topics = topics;
        }
    }

    /** The task's transaction: its producer, and what the open one holds. */
    static final class Open {
        final Transactions.Entry entry;
        final List<Part> dirty = new ArrayList<>();
        boolean begun;
        long sent;
        boolean broken;
        /** When the open transaction began, and the key and value bytes sent in it. */
        long begunAt;
        long bytes;
        /** The task's acknowledged bytes when it began; its own speed so far, and when last read. */
        long ackedAtBegin;
        double liveRate = -1.0;
        long liveAcked;
        long liveReadAt;

        Open(Transactions.Entry entry) {
            this.entry = entry;
        }

        /** Key and value bytes the target acknowledged of every partition this transaction wrote. */
        long acked() {
            long acked = 0L;
            for (Part part : dirty) {
                acked += part.target.ackedBytes();
            }
            return acked;
        }
    }

    /** Closes the producers of flushes that outlive their transaction ({@link #flushWithin}). */
    private static final ScheduledThreadPoolExecutor CUTTER = cutter();

    /** One daemon thread; a timer cancelled by a flush that ended leaves its queue at once. */
    private static ScheduledThreadPoolExecutor cutter() {
        ScheduledThreadPoolExecutor cutter = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "mirrorspark-transaction-cutter");
            t.setDaemon(true);
            return t;
        });
        cutter.setRemoveOnCancelPolicy(true);
        return cutter;
    }

    private final long budgetMs;
    private final long timeoutMs;

    TaskTransactions(WriteSettings settings, WriterClients clients, int task, long batch, boolean retried) {
        this.settings = settings;
        this.clients = clients;
        this.task = task;
        this.batch = batch;
        this.retried = retried;
        this.timeoutMs = timeoutMs(settings.producer);
        this.budgetMs = Math.max(1L, timeoutMs / 2);
    }

    /** Half the producer's {@code transaction.timeout.ms} (Kafka's default 60 s): what a transaction may last. */
    static long budgetMs(Map<String, String> producer) {
        return Math.max(1L, timeoutMs(producer) / 2);
    }

    /** The producer's {@code transaction.timeout.ms} (Kafka's default 60 s): when the broker aborts a transaction. */
    static long timeoutMs(Map<String, String> producer) {
        String set = producer.get("transaction.timeout.ms");
        if (set != null) {
            try {
                return Math.max(1L, Long.parseLong(set.trim()));
            } catch (NumberFormatException e) {
                return 60_000L;  // the producer refuses it itself, naming the key
            }
        }
        return 60_000L;
    }

    /**
     * Flushes {@code producer}; when that is still waiting at {@code deadlineMs} (wall clock) the producer is
     * closed at once, which fails what it holds and ends the flush. Returns false when it was cut so.
     */
    static boolean flushWithin(Producer<byte[], byte[]> producer, long deadlineMs) {
        AtomicBoolean cut = new AtomicBoolean();
        ScheduledFuture<?> timer = CUTTER.schedule(() -> {
            cut.set(true);
            producer.close(Duration.ZERO);
        }, Math.max(0L, deadlineMs - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        try {
            producer.flush();
        } finally {
            timer.cancel(false);
        }
        return !cut.get();
    }

    /**
     * True when the open transaction must be committed before another row is sent: it ran its budget,
     * or it holds more than twice the bytes of the last transaction, or what it sent and the target has
     * not acknowledged yet would not drain in the time left at the task's speed: its last
     * transaction's, or this one's own so far when slower (a quota's throttle that starts inside a
     * transaction, the burst allowance spent by the ones before, shows in its acknowledgements at once).
     * Until this transaction's own speed is read, every byte it sent counts as not acknowledged.
     */
    static boolean due(Open txn, long now, long budgetMs) {
        if (!txn.begun) {
            return false;
        }
        long left = budgetMs - (now - txn.begunAt);
        if (left <= 0) {
            return true;
        }
        Transactions.Entry last = txn.entry;
        double live = liveRate(txn, now);
        long pending = live >= 0 ? txn.bytes - txn.liveAcked : txn.bytes;
        if (last.rate <= 0) {
            return txn.bytes >= FIRST_BYTES || (live >= 0 && pending >= Math.max(FIRST_BYTES / 16, live * left));
        }
        if (txn.bytes >= 2.0 * Math.max(last.bytes, FIRST_BYTES)) {
            return true;
        }
        double rate = live >= 0 ? Math.min(last.rate, live) : last.rate;
        return pending >= Math.max(FIRST_BYTES / 16, (long) (rate * left));
    }

    /** Bytes per ms the target acknowledged of this transaction so far (-1: too early to tell). */
    static double liveRate(Open txn, long now) {
        long ran = now - txn.begunAt;
        if (ran < LIVE_AFTER_MS) {
            return -1.0;
        }
        if (txn.liveRate < 0 || now - txn.liveReadAt >= LIVE_EVERY_MS) {
            txn.liveAcked = txn.acked() - txn.ackedAtBegin;
            txn.liveRate = txn.liveAcked / (double) ran;
            txn.liveReadAt = now;
        }
        return txn.liveRate;
    }

    /** True when the task's transaction must be committed before the next row ({@link #due} with this task's
     *  budget), or, in real-time mode, once it has been open {@code transactionMs}. */
    boolean due(long now) {
        return open != null && (due(open, now, budgetMs) || aged(now));
    }

    /** Real-time mode: the open transaction has held its records for {@code transactionMs}. */
    boolean aged(long now) {
        Open txn = open;
        return settings.transactionMs > 0 && txn != null && txn.begun && now - txn.begunAt >= settings.transactionMs;
    }

    /** Real-time mode: the task's transaction holds records (committed at the source's next poll boundary, or by age). */
    boolean holding() {
        Open txn = open;
        return settings.transactionMs > 0 && txn != null && txn.begun;
    }

    /** Commits the task's transaction mid-batch: the rows sent so far, with their progress, exactly once. */
    void commitNow(MirrorDataWriter.Failure failure) throws IOException {
        commit(failure);
    }

    /**
     * The partition {@code target} of this task, its committed progress known (kept by the JVM where
     * nothing else can have committed it since, else read from the target). The task's producer is
     * made first: its {@code initTransactions} fences an earlier attempt of the task, so nothing can
     * commit the partition after its progress is read.
     */
    Part of(PartitionAcks target) throws IOException {
        String key = WriteSettings.key(target.topic, target.partition);
        Part part = parts.get(key);
        if (part == null) {
            if (open == null) {
                open = new Open(clients.acquireTransactional(settings, task));
            }
            Progress progress = clients.progress(settings, target.topic, target.partition, retried, batch);
            part = new Part(target, progress, settings.topicsOf(target.topic));
            parts.put(key, part);
        }
        return part;
    }

    /**
     * True when the row at {@code upstream} is committed already; it is then paired from the progress,
     * not sent. A row whose pair the progress does not hold (older than the pairs that fit its metadata,
     * or sent by an earlier mid-batch transaction) is reported as a break: the driver must not take the
     * runs around it for contiguous, or translation would run ahead of the records it stands for.
     */
    static boolean committed(Part part, long upstream) {
        part.next = Math.max(part.next, upstream + 1);
        Progress progress = part.progress;
        if (!progress.committed(upstream)) {
            return false;
        }
        part.target.pair(upstream, progress.downstream(upstream));
        part.target.resumed++;
        return true;
    }

    /** Sends {@code record} in the task's transaction, beginning it with the first record. */
    void send(Part part, ProducerRecord<byte[], byte[]> record, Callback ack, long bytes, long now) {
        Open txn = open;  // made by of(), which gave the part
        if (!txn.begun) {
            FaultPoints.reached(FaultPoints.BEGIN, part.target.topic, SENT.get(), 0L);
            txn.entry.producer.beginTransaction();
            txn.begun = true;
            txn.begunAt = now;
            txn.bytes = 0L;
            txn.ackedAtBegin = 0L;
            txn.liveRate = -1.0;
        }
        if (!part.dirty) {
            part.dirty = true;
            txn.dirty.add(part);
            txn.ackedAtBegin += part.target.ackedBytes();
        }
        txn.bytes += bytes;
        txn.sent++;
        SENT.incrementAndGet();
        txn.entry.producer.send(record, ack);
    }

    /**
     * Commits the task's open transaction with the progress of each partition it wrote; {@code failure}:
     * the first failed send (then nothing is committed). What an earlier transaction of the task
     * committed stays committed: its progress says so, and the batch's next attempt skips it.
     */
    void commit(MirrorDataWriter.Failure failure) throws IOException {
        if (open != null && open.begun) {  // else every row was committed already
            commit(open, failure);
        }
    }

    private void commit(Open txn, MirrorDataWriter.Failure failure) throws IOException {
        try {
            if (!flushWithin(txn.entry.producer, txn.begunAt + timeoutMs)) {
                txn.broken = true;
                throw new IOException("flow " + settings.flow + ": the transaction of task " + task + " ("
                    + txn.entry.id + ") did not end within transaction.timeout.ms (" + timeoutMs + " ms): the target "
                    + "has not taken its records (a topic deleted, or the cluster out of reach); its producer is "
                    + "closed, none of it is visible, and the batch runs again");
            }
            failure.check();
            FaultPoints.reached(FaultPoints.SENT, SENT.get(), txn.sent);
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            Map<Part, Progress> committed = new HashMap<>();
            for (Part part : txn.dirty) {
                OffsetRunList runs = part.target.runs();
                offsets.put(new TopicPartition(part.target.topic, part.target.partition),
                    new OffsetAndMetadata(part.next, Progress.encode(part.topics, runs)));
                committed.put(part, new Progress(part.next, runs, false, part.topics));
            }
            txn.entry.producer.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(settings.progressGroup));
            FaultPoints.reached(FaultPoints.BEFORE_COMMIT, SENT.get(), txn.sent);
            txn.entry.producer.commitTransaction();
            txn.begun = false;
            txn.entry.rate = txn.bytes / (double) Math.max(1L, System.currentTimeMillis() - txn.begunAt);
            txn.entry.bytes = txn.bytes;
            for (Map.Entry<Part, Progress> done : committed.entrySet()) {
                Part part = done.getKey();
                part.progress = done.getValue();
                part.dirty = false;
                clients.committed(settings, part.target.topic, part.target.partition, part.progress, batch);
            }
            txn.dirty.clear();
            FaultPoints.reached(FaultPoints.AFTER_COMMIT, SENT.get(), txn.sent);
        } catch (ProducerFencedException e) {
            txn.broken = true;
            throw new IOException("flow " + settings.flow + ": task " + task + " was fenced: a newer writer of its "
                + "transactional.id " + txn.entry.id + " (a retried task attempt, a restarted or second instance) "
                + "holds it; this attempt's transaction is aborted and none of it is visible", e);
        } catch (InvalidProducerEpochException e) {
            txn.broken = true;
            throw new IOException("flow " + settings.flow + ": the transaction of task " + task + " was aborted by "
                + "the target after " + (System.currentTimeMillis() - txn.begunAt) + " ms (its "
                + "transaction.timeout.ms ran out, or a newer writer of transactional.id " + txn.entry.id
                + " fenced it); none of it is visible", e);
        } catch (KafkaException e) {
            txn.broken = true;
            throw new IOException("flow " + settings.flow + ": the transaction of task " + task + " ("
                + txn.entry.id + ") failed and is aborted (none of it is visible): " + e, e);
        }
    }

    /** Aborts what is still open (a failed or cancelled task): none of it becomes visible. */
    void abort() {
        Open txn = open;
        if (txn == null) {
            return;
        }
        if (txn.begun || txn.broken) {
            forgetAll();
        }
        if (txn.begun && !txn.broken) {
            try {
                txn.entry.producer.abortTransaction();
                txn.begun = false;
            } catch (KafkaException e) {
                txn.broken = true;  // fenced or failed: closing it aborts nothing more, the next owner does
            }
        }
    }

    /** Gives the producer back; one left mid-transaction or broken is closed, not kept. */
    void release() {
        Open txn = open;
        if (txn != null) {
            if (txn.broken || txn.begun) {
                forgetAll();
            }
            clients.releaseTransactional(settings, txn.entry, txn.broken || txn.begun);
        }
        open = null;
        parts.clear();
    }

    /** What the JVM keeps of this task's partitions may be behind the target now (a failed or cut task). */
    private void forgetAll() {
        for (Part part : parts.values()) {
            clients.forget(settings, part.target.topic, part.target.partition);
        }
    }
}
