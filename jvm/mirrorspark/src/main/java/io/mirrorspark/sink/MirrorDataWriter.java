package io.mirrorspark.sink;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.mirrorspark.kafka.PollBoundary;
import io.mirrorspark.schema.SchemaIds;
import io.mirrorspark.schema.UnknownSchemaIdException;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One task's writer: sends each row as a record with the source's partition, key, value, headers
 * and timestamp, and pairs its source offset with the target offset in the send's callback. No
 * ordering assumption is needed for the pairing (each callback knows its own record); runs merge
 * pairs that continue each other on both sides.
 */
final class MirrorDataWriter implements DataWriter<InternalRow> {
    private final WriteSettings settings;
    private final WriterClients clients;
    private final Producer<byte[], byte[]> producer;
    private final Map<String, Map<Integer, PartitionAcks>> acks = new HashMap<>();
    private volatile Exception failure;
    private boolean released;
    private UTF8String lastTopicUtf8;
    private String lastTopic;
    private PartitionAcks lastAcks;
    /** Target partitions an interrupted attempt of this batch wrote to, compared before sending. */
    private final Map<String, TargetTail> tails = new HashMap<>();
    /** A retry of a failed task attempt (an executor lost, a task error): it compares too. */
    private final boolean retried;
    private boolean aborted;
    /** How long this JVM may write the flow (renewed by the driver's lease thread, or read from the
     *  target by an executor of its own, {@link LeaseWatch}), null: no lease. */
    private final AtomicLong fence;
    /** The lease read from the target by this executor, null where the driver renews {@link #fence}. */
    private final LeaseWatch watch;
    /** Exactly-once mode: the task's transactions, through one producer for the task (null otherwise). */
    private final TaskTransactions transactions;
    /** Real-time exactly-once: the periodic check that commits an aged transaction (null otherwise). */
    private final ScheduledFuture<?> ticker;
    private boolean tickerStopped;
    /** The flow's Connect transformations, null without {@code transforms}. */
    private final Transforms transforms;

    /** The first failed send, thrown where the task must stop. */
    interface Failure {
        void check() throws IOException;
    }

    /** Target ranges to compare with before sending (empty: nothing to resume in this writer). */
    private final Map<String, long[]> resume;
    /** Per target partition, where this batch's writes begin: a retried attempt compares from there. */
    private final Map<String, Long> retryFrom;

    MirrorDataWriter(WriteSettings settings) {
        this(settings, settings.resume, settings.retryFrom, WriterClients.POOLED, retriedAttempt(), settings.writeBatch);
    }

    /** {@code resume}: the target ranges this writer compares with (a real-time batch: what the
     *  batches before it left of them, {@link ResumeLedger}); {@code batchStarts}: where the real-time
     *  batch's writes begin per target partition; {@code epoch}: the real-time batch. */
    MirrorDataWriter(WriteSettings settings, Map<String, long[]> resume, Map<String, Long> batchStarts, long epoch) {
        this(settings, resume, batchStarts, WriterClients.POOLED, retriedAttempt(), epoch);
    }

    /** {@code clients}: where its Kafka clients come from; {@code retried}: a retry of a failed task attempt. */
    MirrorDataWriter(WriteSettings settings, Map<String, long[]> resume, WriterClients clients, boolean retried) {
        this(settings, resume, settings.retryFrom, clients, retried, settings.writeBatch);
    }

    /** {@code batch}: the micro-batch's id or the real-time batch's epoch (-1: not known). */
    MirrorDataWriter(WriteSettings settings, Map<String, long[]> resume, WriterClients clients, boolean retried,
                     long batch) {
        this(settings, resume, settings.retryFrom, clients, retried, batch);
    }

    /** {@code retryFrom}: per target partition, where the batch's writes begin (what a retried attempt
     *  compares from); {@code batch}: the micro-batch's id or the real-time batch's epoch (-1: not known). */
    MirrorDataWriter(WriteSettings settings, Map<String, long[]> resume, Map<String, Long> retryFrom,
                     WriterClients clients, boolean retried, long batch) {
        this.settings = settings;
        this.clients = clients;
        this.resume = resume;
        this.retryFrom = retryFrom;
        AtomicLong local = Fences.of(settings.flow);
        // An executor in a JVM of its own: no driver renews a fence here, the lease is read from the target.
        this.watch = local == null && settings.leaseGroup != null ? LeaseWatch.acquire(settings) : null;
        this.fence = watch != null ? watch.until : local;
        this.transactions = settings.exactlyOnce
            ? new TaskTransactions(settings, clients, taskIndex(), batch, retried) : null;
        this.producer = settings.exactlyOnce ? null : clients.acquireProducer(settings);
        this.retried = retried;
        this.transforms = Transforms.of(settings.transforms);
        // Real-time exactly-once: what a task holds is committed when its source has handed over everything
        // its fetches showed (PollBoundary), or once it is transactionMs old, rows or not.
        boolean realTime = transactions != null && settings.transactionMs > 0;
        long every = Math.max(1L, settings.transactionMs / 4);
        this.ticker = realTime
            ? TICKS.scheduleWithFixedDelay(() -> commitIf(false), every, every, TimeUnit.MILLISECONDS) : null;
        if (realTime) {
            PollBoundary.register(() -> commitIf(true));
        }
    }

    /** Real-time exactly-once: threads that commit a task's aged transaction while no row comes. */
    private static final ScheduledThreadPoolExecutor TICKS = ticks();

    private static ScheduledThreadPoolExecutor ticks() {
        ScheduledThreadPoolExecutor ticks = new ScheduledThreadPoolExecutor(
            Math.max(2, Runtime.getRuntime().availableProcessors()), r -> {
                Thread t = new Thread(r, "mirrorspark-transaction-ticks");
                t.setDaemon(true);
                return t;
            });
        ticks.setRemoveOnCancelPolicy(true);
        return ticks;
    }

    /**
     * Real-time exactly-once: commits the task's transaction at the source's poll boundary
     * ({@code boundary}: records held), or from the ticker once it is {@code transactionMs} old. A
     * failure is the task's: the next row, or the batch's commit, throws it.
     */
    private void commitIf(boolean boundary) {
        synchronized (transactions) {
            long now = System.currentTimeMillis();
            if (tickerStopped || failure != null || !(boundary ? transactions.holding() : transactions.aged(now))) {
                return;
            }
            try {
                transactions.commitNow(this::checkFailure);
            } catch (IOException | RuntimeException e) {
                failure = e;
            }
        }
    }

    private void stopTicker() {
        if (ticker != null) {
            PollBoundary.clear();
            ticker.cancel(false);
            synchronized (transactions) {
                tickerStopped = true;  // a check already running ends before this returns
            }
        }
    }

    /** The running task's index in the batch's layout (its input partition: a group of partitions); 0 outside a task. */
    private static int taskIndex() {
        TaskContext task = TaskContext.get();
        return task == null ? 0 : task.partitionId();
    }

    /** True in a retry of a failed task attempt (the running task's attempt number is above 0). */
    private static boolean retriedAttempt() {
        TaskContext task = TaskContext.get();
        return task != null && task.attemptNumber() > 0;
    }

    @Override
    public void write(InternalRow row) throws IOException {
        checkFailure();
        WriteSettings s = settings;
        String topic = topic(row.getUTF8String(s.topic));
        if (topic == null) {
            return;  // a source topic this flow does not copy (its plan has no remote topic for it)
        }
        int partition = row.getInt(s.partition);
        byte[] key = row.isNullAt(s.key) ? null : row.getBinary(s.key);
        byte[] value = row.isNullAt(s.value) ? null : row.getBinary(s.value);
        long ts = row.isNullAt(s.timestamp) ? -1L
            : s.timestampMicros ? Math.floorDiv(row.getLong(s.timestamp), 1000L) : row.getLong(s.timestamp);
        long upstream = row.getLong(s.offset);
        RecordHeaders headers = new RecordHeaders();
        if (!row.isNullAt(s.headers)) {
            ArrayData array = row.getArray(s.headers);
            for (int i = 0; i < array.numElements(); i++) {
                InternalRow h = array.getStruct(i, 2);
                headers.add(new RecordHeader(h.getUTF8String(0).toString(), h.isNullAt(1) ? null : h.getBinary(1)));
            }
        }
        if (s.provenanceSource != null && !Provenance.mark(headers, s.provenanceSource, s.provenanceTarget)) {
            return;  // it has been in the target already: active/active on the same names skips it
        }
        if (transforms != null) {  // MM2's transforms, after the record is made as MM2's source task makes it
            Transforms.Result changed = transforms.apply(topic, partition, key, value, ts, headers);
            if (changed == null) {
                return;  // dropped by a transformation, as in MM2: no offset pair, like a control record's gap
            }
            key = changed.key();
            value = changed.value();
            ts = changed.timestamp() == null ? -1L : changed.timestamp();
            headers = changed.headers();
        }
        boolean unresolved = false;  // a key or value whose id neither registry knows: copied unchanged, counted
        if (s.schemaIds != null && s.schemaTopics.contains(topic)) {  // after the transforms: the target's registry ids, before any comparison
            try {
                unresolved = s.schemaIds.unresolved(key) || s.schemaIds.unresolved(value);
                key = s.schemaIds.rewrite(key);
                value = s.schemaIds.rewrite(value);
            } catch (SchemaIds.UnknownSchemaId e) {
                throw new UnknownSchemaIdException(s.flow, topic, partition, upstream, e.id());
            }
        }
        long bytes = (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        long now = System.currentTimeMillis();
        long age = ts < 0 ? -1L : Math.max(0L, now - ts);
        PartitionAcks target = acksFor(topic, partition);
        if (transactions != null) {
            synchronized (transactions) {  // real-time mode: the ticker may commit between two rows
                checkFailure();
                TaskTransactions.Part part = transactions.of(target);
                if (transactions.due(now)) {  // committed before this row: its progress excludes it
                    transactions.commitNow(this::checkFailure);
                }
                if (TaskTransactions.committed(part, upstream)) {
                    return;  // in a committed transaction already: paired from the progress, not sent again
                }
                Fences.check(s.flow, fence);
                target.unresolvedSchemas += unresolved ? 1 : 0;
                transactions.send(part, new ProducerRecord<>(topic, partition, ts < 0 ? null : ts, key, value,
                    headers), new Ack(target, upstream, ts, bytes, age), bytes, now);
            }
            return;
        }
        if ((!resume.isEmpty() || (retried && !retryFrom.isEmpty()))
            && alreadyWritten(target, upstream, key, value, headers, ts)) {
            return;
        }
        Fences.check(s.flow, fence);
        target.unresolvedSchemas += unresolved ? 1 : 0;
        producer.send(new ProducerRecord<>(topic, partition, ts < 0 ? null : ts, key, value, headers),
            new Ack(target, upstream, ts, bytes, age));
    }

    /** True when the target already holds this row at the next offset an interrupted attempt wrote. */
    private boolean alreadyWritten(PartitionAcks target, long upstream, byte[] key, byte[] value,
                                   RecordHeaders headers, long ts) {
        String k = WriteSettings.key(target.topic, target.partition);
        TargetTail tail = tails.get(k);
        if (tail == null) {
            long[] range = resume.get(k);
            Long from = range == null ? null : range[0];
            long to = range == null ? 0L : range[1];
            Long batchStart = retried ? retryFrom.get(k) : null;
            if (batchStart != null) {  // an earlier attempt may have written past the range: up to the end now
                from = from == null ? batchStart : Math.min(from, batchStart);
                to = TargetTail.END_NOW;
            }
            if (from == null || (to != TargetTail.END_NOW && to <= from)) {
                return false;
            }
            tail = new TargetTail(clients.tailConsumer(settings, target.topic, target.partition), target.topic,
                target.partition, from, to, settings.provenanceSource != null);
            tails.put(k, tail);
        }
        if (!tail.active()) {
            return false;
        }
        long at = tail.match(key, value, headers, ts);
        if (at < 0) {
            target.recopied += tail.recopied;
            return false;
        }
        target.pair(upstream, at);
        target.resumed++;
        return true;
    }

    /** The target topic of a row as a String (null: not copied), found once per run of rows of the same topic. */
    private String topic(UTF8String utf8) {
        if (!utf8.equals(lastTopicUtf8)) {
            lastTopicUtf8 = utf8.clone();
            lastTopic = settings.remoteTopics == null ? utf8.toString() : settings.remoteTopics.get(utf8.toString());
        }
        return lastTopic;
    }

    /** The acks of a target partition; rows come in runs of one partition, so the last one is kept at hand. */
    private PartitionAcks acksFor(String topic, int partition) {
        PartitionAcks last = lastAcks;
        if (last != null && last.partition == partition && last.topic.equals(topic)) {
            return last;
        }
        last = acks.computeIfAbsent(topic, t -> new HashMap<>())
            .computeIfAbsent(partition, p -> new PartitionAcks(topic, p));
        lastAcks = last;
        return last;
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        for (Map<Integer, PartitionAcks> byPartition : acks.values()) {
            for (PartitionAcks target : byPartition.values()) {
                TargetTail tail = tails.get(WriteSettings.key(target.topic, target.partition));
                if (tail != null && tail.active() && !resume.isEmpty()) {
                    target.resumeNext = tail.resumeAt();  // every row matched: the next batch carries on
                }
            }
        }
        closeTails();
        if (transactions != null) {
            stopTicker();
            synchronized (transactions) {
                transactions.commit(this::checkFailure);
            }
        } else {
            producer.flush();
            checkFailure();
        }
        List<PartitionAcks> parts = new ArrayList<>();
        for (Map<Integer, PartitionAcks> byPartition : acks.values()) {
            parts.addAll(byPartition.values());
        }
        SparkEnv env = SparkEnv.get();
        return new TaskReport(env == null ? "unknown" : env.executorId(), parts, retried);
    }

    private void checkFailure() throws IOException {
        Exception failed = failure;
        if (failed != null) {
            throw new IOException("writing to the target failed: " + failed, failed);
        }
    }

    @Override
    public void abort() {
        // Spark calls close() next; the failure (if any) retires the producer there.
        aborted = true;
        if (transactions != null) {
            stopTicker();
            synchronized (transactions) {
                transactions.abort();
            }
        }
    }

    @Override
    public void close() {
        closeTails();
        if (transforms != null) {
            transforms.close();
        }
        if (watch != null && !released) {
            watch.release();
        }
        // Called after commit() and after abort(): give the shared producer back exactly once.
        if (!released && transactions != null) {
            released = true;
            stopTicker();
            synchronized (transactions) {
                transactions.abort();  // a task that neither committed nor aborted (an error in between)
                transactions.release();
            }
            return;
        }
        if (!released) {
            released = true;
            if (aborted && failure == null) {
                // What this attempt handed to the shared producer lands now, before a retry reads
                // the target's end to compare with.
                producer.flush();
            }
            clients.releaseProducer(settings, producer, failure != null);
            if (fence != null) {
                for (Map<Integer, PartitionAcks> byPartition : acks.values()) {
                    for (PartitionAcks target : byPartition.values()) {
                        long valid = target.lastValid();
                        if (valid >= 0) {
                            Fences.acknowledged(settings.flow, target.topic, target.partition, valid);
                        }
                    }
                }
            }
        }
    }

    private void closeTails() {
        for (TargetTail tail : tails.values()) {
            tail.close();
        }
    }

    private final class Ack implements Callback {
        private final PartitionAcks target;
        private final long upstream;
        private final long timestamp;
        private final long bytes;
        private final long age;

        Ack(PartitionAcks target, long upstream, long timestamp, long bytes, long age) {
            this.target = target;
            this.upstream = upstream;
            this.timestamp = timestamp;
            this.bytes = bytes;
            this.age = age;
        }

        @Override
        public void onCompletion(RecordMetadata metadata, Exception exception) {
            if (exception != null) {
                if (failure == null) {
                    failure = exception;
                }
                return;
            }
            long latency = timestamp < 0 ? -1L : Math.max(0L, System.currentTimeMillis() - timestamp);
            long offset = metadata.hasOffset() ? metadata.offset() : -1L;
            target.ack(upstream, offset, bytes, age, latency);
            if (fence != null && offset >= 0) {
                if (Fences.expired(fence)) {  // sent before a pause, acknowledged after another writer took over
                    Fences.late(settings.flow, target.topic, target.partition, offset, target.lastValid(), upstream);
                } else {
                    target.valid(offset);
                }
            }
        }
    }
}
