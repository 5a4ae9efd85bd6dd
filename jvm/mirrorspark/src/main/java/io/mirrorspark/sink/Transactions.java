package io.mirrorspark.sink;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.mirrorspark.kafka.ConnectionSettings;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Exactly-once mode: one transactional producer per target partition of a flow, kept by the JVM
 * across batches. Its {@code transactional.id} is stable ({@code <prefix><topic>-<partition>}), so
 * creating one (a restart, a retried task attempt on another executor, a second instance) fences
 * every earlier producer of that partition: their open transaction is aborted and they can commit
 * nothing more. Each new producer then reads the partition's committed progress ({@link Progress})
 * and the writer skips what is committed. A producer kept from an earlier batch needs no read: had
 * another producer been created since, this one would be fenced and its next write would fail.
 *
 * <p>A kept producer is used only with the settings it was made with: when they change (a topic's
 * {@code max.message.bytes} grew, so the driver asks for a larger {@code max.request.size}) it is
 * closed and a new one made, which fences nothing the old one still had open. One unused for
 * {@link #IDLE_MS} (its topic deleted, its flow stopped or moved to another instance) is closed.
 * Progress, kept or read, counts only for the topics the batch names ({@link Progress#forTopics}).
 */
final class Transactions {
    /** A producer unused this long is closed; the partition's next write makes a new one. */
    static final long IDLE_MS = 10 * 60_000L;
    private static final long SWEEP_EVERY_MS = 30_000L;
    private static final Map<String, Entry> POOL = new HashMap<>();
    private static final Map<Map<String, Object>, Admin> ADMINS = new HashMap<>();
    private static final long READ_TIMEOUT_MS = 60_000L;
    private static long sweptAt;

    /** A pooled producer, the flow's last commit on its partition, and whether a task holds it. */
    static final class Entry {
        final String id;
        final Producer<byte[], byte[]> producer;
        final TopicPartition target;
        /** The producer settings it was made with. */
        final Map<String, String> settings;
        Progress progress;
        boolean inUse;
        /** When a task last acquired or released it. */
        long usedAt;
        /** Bytes per millisecond of this partition's last transaction, begin to commit (0: not known yet), and its bytes. */
        double rate;
        long bytes;

        Entry(String id, Producer<byte[], byte[]> producer, TopicPartition target, Progress progress) {
            this(id, producer, target, progress, Map.of());
        }

        Entry(String id, Producer<byte[], byte[]> producer, TopicPartition target, Progress progress,
              Map<String, String> settings) {
            this.id = id;
            this.producer = producer;
            this.target = target;
            this.progress = progress;
            this.settings = settings;
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

    static String transactionalId(WriteSettings s, String topic, int partition) {
        return s.transactionalIdPrefix + topic + "-" + partition;
    }

    private static String key(WriteSettings s, String id) {
        return s.producer.get("bootstrap.servers") + '\u0000' + id;
    }

    /** True when {@code kept}, unused, may serve a task whose producer settings are {@code settings}. */
    static boolean reusable(Entry kept, Map<String, String> settings) {
        return !kept.inUse && kept.settings.equals(settings);
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
     * The producer of {@code topic}-{@code partition} for one task, its progress known; a new one is
     * created (fencing every earlier producer of the partition) when none is kept here, the kept one is
     * held by another task, or it was made with other settings.
     */
    static Entry acquire(WriteSettings s, String topic, int partition) throws IOException {
        String id = transactionalId(s, topic, partition);
        String key = key(s, id);
        String topics = s.topicsOf(topic);
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
                // Kept for a topic re-created since (the driver's ids changed): nothing of the new one is committed.
                kept.progress = Progress.forTopics(kept.progress, topics);
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
        TopicPartition target = new TopicPartition(topic, partition);
        Producer<byte[], byte[]> producer = create(s, id);
        try {
            producer.initTransactions();  // fences the earlier producers of this id, aborts their open transaction
            Progress progress = Progress.forTopics(read(s, target), topics);
            Entry entry = new Entry(id, producer, target, progress, new HashMap<>(s.producer));
            entry.inUse = true;
            entry.usedAt = now;
            if (outdated != null) {  // the partition's measured speed outlives the settings
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
        } catch (RuntimeException | IOException e) {
            producer.close(Duration.ZERO);
            throw e;
        }
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
