package io.mirrorspark.sink;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;

/**
 * One task's transactions, exactly-once mode: one per target partition it writes, holding that
 * partition's records of the batch and, committed with them, the flow's progress on it (the next
 * source offset and the batch's offset pairs). Rows a committed transaction already holds (a batch
 * run again after a crash, a retried task attempt) are paired from the progress, never sent again.
 */
final class TaskTransactions {
    /** Records this JVM sent in transactions: where the fault drills' moments are counted from. */
    private static final AtomicLong SENT = new AtomicLong();
    private final WriteSettings settings;
    private final Map<String, Open> open = new LinkedHashMap<>();

    /** One target partition's transaction in this task. */
    static final class Open {
        final Transactions.Entry entry;
        final PartitionAcks target;
        boolean begun;
        long sent;
        long next = -1L;
        boolean broken;

        Open(Transactions.Entry entry, PartitionAcks target) {
            this.entry = entry;
            this.target = target;
        }
    }

    TaskTransactions(WriteSettings settings) {
        this.settings = settings;
    }

    /** The transaction of {@code target} in this task (its producer acquired on first use). */
    Open of(PartitionAcks target) throws IOException {
        String key = WriteSettings.key(target.topic, target.partition);
        Open txn = open.get(key);
        if (txn == null) {
            txn = new Open(Transactions.acquire(settings, target.topic, target.partition), target);
            open.put(key, txn);
        }
        return txn;
    }

    /** True when the row at {@code upstream} is committed already; it is then paired, not sent. */
    static boolean committed(Open txn, long upstream) {
        txn.next = Math.max(txn.next, upstream + 1);
        Progress progress = txn.entry.progress;
        if (!progress.committed(upstream)) {
            return false;
        }
        txn.target.pair(upstream, progress.downstream(upstream));
        txn.target.resumed++;
        return true;
    }

    /** Sends {@code record} in the partition's transaction, beginning it with the first record. */
    static void send(Open txn, ProducerRecord<byte[], byte[]> record, Callback ack) {
        if (!txn.begun) {
            txn.entry.producer.beginTransaction();
            txn.begun = true;
        }
        txn.sent++;
        SENT.incrementAndGet();
        txn.entry.producer.send(record, ack);
    }

    /**
     * Commits each partition's transaction with its progress; {@code failure}: the first failed send
     * (then nothing is committed). A partition committed before a later one fails stays committed: its
     * progress says so, and the batch's next attempt skips it.
     */
    void commit(MirrorDataWriter.Failure failure) throws IOException {
        for (Open txn : open.values()) {
            if (!txn.begun) {
                continue;  // every row was committed already
            }
            try {
                txn.entry.producer.flush();
                failure.check();
                FaultPoints.reached(FaultPoints.SENT, SENT.get(), txn.sent);
                long[] runs = txn.target.runs();
                OffsetAndMetadata progress = new OffsetAndMetadata(txn.next, Progress.encode(runs));
                txn.entry.producer.sendOffsetsToTransaction(
                    Collections.singletonMap(txn.entry.target, progress), new ConsumerGroupMetadata(settings.progressGroup));
                FaultPoints.reached(FaultPoints.BEFORE_COMMIT, SENT.get(), txn.sent);
                txn.entry.producer.commitTransaction();
                txn.begun = false;
                txn.entry.progress = new Progress(txn.next, runs, false);
                FaultPoints.reached(FaultPoints.AFTER_COMMIT, SENT.get(), txn.sent);
            } catch (ProducerFencedException | InvalidProducerEpochException e) {
                txn.broken = true;
                throw new IOException("flow " + settings.flow + ": fenced on " + txn.entry.target + ": a newer writer of "
                    + "this partition (a retried task attempt, a restarted or second instance) holds transactional.id "
                    + txn.entry.id + "; this attempt's transaction is aborted and none of it is visible", e);
            } catch (KafkaException e) {
                txn.broken = true;
                throw new IOException("flow " + settings.flow + ": the transaction on " + txn.entry.target
                    + " failed and is aborted (none of it is visible): " + e, e);
            }
        }
    }

    /** Aborts what is still open (a failed or cancelled task): none of it becomes visible. */
    void abort() {
        for (Open txn : open.values()) {
            if (txn.begun && !txn.broken) {
                try {
                    txn.entry.producer.abortTransaction();
                    txn.begun = false;
                } catch (KafkaException e) {
                    txn.broken = true;  // fenced or failed: closing it aborts nothing more, the next owner does
                }
            }
        }
    }

    /** Gives every producer back; one left mid-transaction or broken is closed, not kept. */
    void release() {
        for (Open txn : open.values()) {
            Transactions.release(settings, txn.entry, txn.broken || txn.begun);
        }
        open.clear();
    }
}
