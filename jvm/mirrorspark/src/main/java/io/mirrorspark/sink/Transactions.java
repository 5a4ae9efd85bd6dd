package io.mirrorspark.sink;

import java.io.IOException;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
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
 */
final class Transactions {
    private static final Map<String, Entry> POOL = new HashMap<>();
    private static final Map<Map<String, String>, Admin> ADMINS = new HashMap<>();
    private static final long READ_TIMEOUT_MS = 60_000L;

    /** A pooled producer, the flow's last commit on its partition, and whether a task holds it. */
    static final class Entry {
        final String id;
        final KafkaProducer<byte[], byte[]> producer;
        final TopicPartition target;
        Progress progress;
        boolean inUse;
        /** Bytes per millisecond of this partition's last transaction, begin to commit (0: not known yet), and its bytes. */
        double rate;
        long bytes;

        Entry(String id, KafkaProducer<byte[], byte[]> producer, TopicPartition target, Progress progress) {
            this.id = id;
            this.producer = producer;
            this.target = target;
            this.progress = progress;
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

    /**
     * The producer of {@code topic}-{@code partition} for one task, its progress known; a new one is
     * created (fencing every earlier producer of the partition) when none is kept here or the kept
     * one is held by another task.
     */
    static Entry acquire(WriteSettings s, String topic, int partition) throws IOException {
        String id = transactionalId(s, topic, partition);
        String key = s.producer.get("bootstrap.servers") + '\u0000' + id;
        synchronized (POOL) {
            Entry kept = POOL.get(key);
            if (kept != null && !kept.inUse) {
                kept.inUse = true;
                return kept;
            }
        }
        TopicPartition target = new TopicPartition(topic, partition);
        KafkaProducer<byte[], byte[]> producer = create(s, id);
        try {
            producer.initTransactions();  // fences the earlier producers of this id, aborts their open transaction
            Progress progress = read(s, target);
            Entry entry = new Entry(id, producer, target, progress);
            entry.inUse = true;
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

    /** The task is done with {@code entry}; {@code broken}: it failed or was fenced, close it. */
    static void release(WriteSettings s, Entry entry, boolean broken) {
        String key = s.producer.get("bootstrap.servers") + '\u0000' + entry.id;
        synchronized (POOL) {
            entry.inUse = false;
            if (!broken) {
                return;
            }
            if (POOL.get(key) == entry) {
                POOL.remove(key);
            }
        }
        entry.producer.close(Duration.ZERO);
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

    private static Admin admin(Map<String, String> producer) {
        synchronized (POOL) {
            return ADMINS.computeIfAbsent(producer, p -> {
                Map<String, Object> conf = ConnectionSettings.of(p);
                conf.put("client.id", "mirrorspark-progress");
                return Admin.create(conf);
            });
        }
    }

    private static KafkaProducer<byte[], byte[]> create(WriteSettings s, String id) {
        Map<String, Object> config = new HashMap<>(s.producer);
        config.put("transactional.id", id);
        config.put("enable.idempotence", "true");
        config.put("acks", "all");
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }
}
