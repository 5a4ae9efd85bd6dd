package io.mirrorspark.sink;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.mirrorspark.kafka.ConnectionSettings;
import io.mirrorspark.kafka.OpenTransactions;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.SparkEnv;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once mode: one transactional producer per task of a flow (a group of partitions, as MM2's
 * exactly-once source tasks each have one), kept by the JVM across batches. Its
 * {@code transactional.id} is the flow's prefix and the task's index in the batch's layout, so a
 * retried attempt of a task (on this executor or another) fences the attempt before it: its open
 * transaction is aborted and it can commit nothing more. Which task writes a partition can change
 * from batch to batch (or real-time batch), and another instance or an earlier start may have laid the flow out
 * differently, so the driver fences, once per start, every id under the flow's prefix whose
 * transaction is open ({@link #fenceEarlier}), before any task writes.
 *
 * <p>Each target partition's committed progress ({@link Progress}) is read from the target when a
 * task first writes it, and kept ({@link Known}) with the start and batch that last read or committed
 * it: it is used again without a read only where nothing else can have committed the partition
 * since, the same start, and either every task runs in this JVM (Spark's local mode) or this JVM
 * committed it in the batch before. A task that fails forgets what it touched.
 *
 * <p>A kept producer is used only with the settings it was made with: when they change (a topic's
 * {@code max.message.bytes} grew, so the driver asks for a larger {@code max.request.size}) it is
 * closed and a new one made. One unused for {@link #IDLE_MS} (its flow stopped or moved to another
 * instance) is closed. Progress counts only for the topics the batch names ({@link Progress#forTopics}).
 */
final class Transactions {
    private static final Logger LOG = LoggerFactory.getLogger(Transactions.class);
    /** A producer unused this long is closed; the task's next write makes a new one. */
    static final long IDLE_MS = 10 * 60_000L;
    private static final long SWEEP_EVERY_MS = 30_000L;
    private static final Map<String, Entry> POOL = new HashMap<>();
    private static final Map<Map<String, Object>, Admin> ADMINS = new HashMap<>();
    /** Per target partition ({@link #partitionKey}): its progress as this JVM last read or committed it. */
    private static final Map<String, Known> KNOWN = new HashMap<>();
    /** The starts ({@code flow NUL writeRun}) whose earlier writers' open transactions this JVM fenced. */
    private static final Set<String> FENCED = new HashSet<>();
    private static final long READ_TIMEOUT_MS = 60_000L;
    private static long sweptAt;

    /** A pooled producer, the settings it was made with, whether a task holds it, and its speed. */
    static final class Entry {
        final String id;
        final Producer<byte[], byte[]> producer;
        /** The producer settings it was made with. */
        final Map<String, String> settings;
        boolean inUse;
        /** When a task last acquired or released it. */
        long usedAt;
        /** Bytes per millisecond of this task's last transaction, begin to commit (0: not known yet), and its bytes. */
        double rate;
        long bytes;

        Entry(String id, Producer<byte[], byte[]> producer, Map<String, String> settings) {
            this.id = id;
            this.producer = producer;
            this.settings = settings;
        }
    }

    /** A target partition's progress, and the start ({@code writeRun}) and batch that last read or committed it. */
    static final class Known {
        final Progress progress;
        final String run;
        final long batch;

        Known(Progress progress, String run, long batch) {
            this.progress = progress;
            this.run = run;
            this.batch = batch;
        }
    }

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (POOL) {
                for (Entry e : POOL.values()) {
                    e.producer.close(Duration.ofSeconds(5));
                }
                for (Admin admin : ADMINS.values()) {
                    admin.close(Duration.ofSeconds(2));
                }
            }
        }, "mirrorspark-transactions-close"));
    }

    private Transactions() {
    }

    /** The {@code transactional.id} of task {@code task} (its index in the batch's layout). */
    static String transactionalId(WriteSettings s, int task) {
        return s.transactionalIdPrefix + task;
    }

    private static String key(WriteSettings s, String id) {
        return s.producer.get("bootstrap.servers") + '\u0000' + id;
    }

    private static String partitionKey(WriteSettings s, String topic, int partition) {
        return s.producer.get("bootstrap.servers") + '\u0000' + s.progressGroup + '\u0000' + topic + '\u0000' + partition;
    }

    /** True when {@code kept}, unused, may serve a task whose producer settings are {@code settings}. */
    static boolean reusable(Entry kept, Map<String, String> settings) {
        return !kept.inUse && kept.settings.equals(settings);
    }

    /**
     * True when {@code known} still says what the target holds for a writer of start {@code run} and
     * batch {@code batch}: read or committed in the same start, and either every task runs in this JVM
     * ({@code allHere}) or this JVM read or committed it in this batch or the one before (no other
     * task can have written the partition since: a batch's partition is written by one task, and one
     * that failed made its JVM forget it).
     */
    static boolean usable(Known known, String run, long batch, boolean allHere) {
        return known != null && run != null && run.equals(known.run) && (allHere || known.batch >= batch - 1);
    }

    /**
     * Takes the entries of {@code pool} no task has used for {@code idleMs} out of it, and returns them
     * to be closed (an entry in use is never idle).
     */
    static List<Entry> takeIdle(Map<String, Entry> pool, long now, long idleMs) {
        List<Entry> idle = new ArrayList<>();
        for (Iterator<Entry> it = pool.values().iterator(); it.hasNext();) {
            Entry e = it.next();
            if (!e.inUse && now - e.usedAt >= idleMs) {
                it.remove();
                idle.add(e);
            }
        }
        return idle;
    }

    /**
     * The producer of task {@code task} of the flow; a new one is created (fencing every earlier
     * producer of the id) when none is kept here, the kept one is held by another task, or it was made
     * with other settings.
     */
    static Entry acquire(WriteSettings s, int task) {
        String id = transactionalId(s, task);
        String key = key(s, id);
        long now = System.currentTimeMillis();
        List<Entry> closing = new ArrayList<>();
        Entry reused = null;
        Entry outdated = null;
        synchronized (POOL) {
            if (now - sweptAt >= SWEEP_EVERY_MS) {
                sweptAt = now;
                closing.addAll(takeIdle(POOL, now, IDLE_MS));
            }
            Entry kept = POOL.get(key);
            if (kept != null && reusable(kept, s.producer)) {
                kept.inUse = true;
                kept.usedAt = now;
                reused = kept;
            } else if (kept != null && !kept.inUse) {
                POOL.remove(key);  // made with other settings: replaced (the new one fences it anyway)
                closing.add(kept);
                outdated = kept;
            }
        }
        close(closing);
        if (reused != null) {
            return reused;
        }
        Producer<byte[], byte[]> producer = create(s, id);
        try {
            producer.initTransactions();  // fences the earlier producers of this id, aborts their open transaction
        } catch (RuntimeException e) {
            producer.close(Duration.ZERO);
            throw e;
        }
        Entry entry = new Entry(id, producer, new HashMap<>(s.producer));
        entry.inUse = true;
        entry.usedAt = now;
        if (outdated != null) {  // the task's measured speed outlives the settings
            entry.rate = outdated.rate;
            entry.bytes = outdated.bytes;
        }
        Entry replaced;
        synchronized (POOL) {
            replaced = POOL.put(key, entry);
        }
        if (replaced != null && !replaced.inUse) {
            replaced.producer.close(Duration.ZERO);  // fenced by the new one anyway
        }
        return entry;
    }

    /**
     * The task is done with {@code entry}; {@code broken}: it failed or was fenced, close it. One replaced
     * while the task held it (another task made a new one) is closed too: nothing can use it any more.
     */
    static void release(WriteSettings s, Entry entry, boolean broken) {
        String key = key(s, entry.id);
        synchronized (POOL) {
            entry.inUse = false;
            entry.usedAt = System.currentTimeMillis();
            boolean pooled = POOL.get(key) == entry;
            if (!broken && pooled) {
                return;
            }
            if (pooled) {
                POOL.remove(key);
            }
        }
        entry.producer.close(Duration.ZERO);
    }

    /**
     * The committed progress of {@code topic}-{@code partition} for a writer of {@code s}, for the
     * batch's topics: kept where nothing else can have committed it since ({@link #usable}), else read
     * from the target ({@code fresh}: read in any case, a retried task attempt).
     */
    static Progress progress(WriteSettings s, String topic, int partition, boolean fresh, long batch)
        throws IOException {
        String key = partitionKey(s, topic, partition);
        String topics = s.topicsOf(topic);
        if (!fresh) {
            Known known;
            synchronized (KNOWN) {
                known = KNOWN.get(key);
            }
            if (usable(known, s.writeRun, batch, allTasksHere())) {
                return Progress.forTopics(known.progress, topics);
            }
        }
        Progress read = read(s, new TopicPartition(topic, partition));
        remember(s, topic, partition, read, batch);
        return Progress.forTopics(read, topics);
    }

    /** {@code progress} is what the target holds for the partition now (read, or committed by this JVM). */
    static void remember(WriteSettings s, String topic, int partition, Progress progress, long batch) {
        if (s.writeRun == null) {
            return;  // not told its start: nothing kept can be told apart from another start's
        }
        synchronized (KNOWN) {
            KNOWN.put(partitionKey(s, topic, partition), new Known(progress, s.writeRun, batch));
        }
    }

    /** A task that wrote the partition failed or was cut: what this JVM knew of it may be behind. */
    static void forget(WriteSettings s, String topic, int partition) {
        synchronized (KNOWN) {
            KNOWN.remove(partitionKey(s, topic, partition));
        }
    }

    /** True in Spark's local mode: every task of the application runs in this JVM. */
    private static boolean allTasksHere() {
        SparkEnv env = SparkEnv.get();
        return env != null && "driver".equals(env.executorId());  // Spark's id of the driver's own executor
    }

    /**
     * Driver side, once per start of the flow's query ({@code writeRun}) before its first batch
     * writes: closes the flow's producers this JVM keeps (their epochs may be stale: another instance
     * may have written since) and fences every id under the flow's prefix whose transaction is open on
     * the target ({@link OpenTransactions}): a writer that stopped or stalled mid-transaction, with
     * whatever layout it had, can commit nothing after this start's tasks write.
     */
    static void fenceEarlier(WriteSettings s) {
        if (!s.exactlyOnce || s.writeRun == null) {
            return;
        }
        String start = s.flow + '\u0000' + s.writeRun;
        synchronized (FENCED) {
            if (FENCED.contains(start)) {
                return;
            }
        }
        List<Entry> closing = new ArrayList<>();
        synchronized (POOL) {
            for (Iterator<Entry> it = POOL.values().iterator(); it.hasNext();) {
                Entry e = it.next();
                if (!e.inUse && e.id.startsWith(s.transactionalIdPrefix)) {
                    it.remove();
                    closing.add(e);
                }
            }
        }
        close(closing);
        try {
            List<String> fenced = OpenTransactions.fence(admin(s.producer), s.transactionalIdPrefix, READ_TIMEOUT_MS);
            if (!fenced.isEmpty()) {
                LOG.info("flow {}: fenced {} transaction(s) an earlier writer left open on the target ({}): "
                    + "the broker aborted them", s.flow, fenced.size(), String.join(", ", fenced));
            }
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("flow " + s.flow + ": cannot fence the transactions an earlier writer "
                + "left open on the target (ids under " + s.transactionalIdPrefix + "): " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("flow " + s.flow + ": interrupted while fencing earlier writers", e);
        }
        synchronized (FENCED) {
            FENCED.add(start);
        }
    }

    private static void close(List<Entry> entries) {
        for (Entry e : entries) {
            e.producer.close(Duration.ZERO);  // not in a transaction: released whole, or it would have been closed then
        }
    }

    /** The flow's committed progress on {@code target}, read as a read_committed consumer sees it. */
    private static Progress read(WriteSettings s, TopicPartition target) throws IOException {
        Admin admin = admin(s.producer);
        ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec()
            .topicPartitions(Collections.singletonList(target));
        try {
            Map<TopicPartition, OffsetAndMetadata> found = admin.listConsumerGroupOffsets(
                    Collections.singletonMap(s.progressGroup, spec),
                    new ListConsumerGroupOffsetsOptions().requireStable(true))
                .partitionsToOffsetAndMetadata(s.progressGroup).get(READ_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            OffsetAndMetadata at = found.get(target);
            return at == null ? Progress.NONE : Progress.decode(at.offset(), at.metadata());
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("flow " + s.flow + ": cannot read the committed progress of " + target
                + " (group " + s.progressGroup + ") on the target: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading the committed progress of " + target, e);
        }
    }

    /** One admin client per target cluster connection (the producer's tuning does not make another). */
    private static Admin admin(Map<String, String> producer) {
        Map<String, Object> connection = ConnectionSettings.of(producer);
        synchronized (POOL) {
            return ADMINS.computeIfAbsent(connection, c -> {
                Map<String, Object> conf = new HashMap<>(c);
                conf.put("client.id", "mirrorspark-progress");
                return Admin.create(conf);
            });
        }
    }

    private static Producer<byte[], byte[]> create(WriteSettings s, String id) {
        Map<String, Object> config = new HashMap<>(s.producer);
        config.put("transactional.id", id);
        config.put("enable.idempotence", "true");
        config.put("acks", "all");
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }
}
