package io.mirrorspark.source;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Idle consumers of an executor JVM, by settings, reused across batches: a new consumer per task
 * would pay a metadata round trip and new broker connections every batch. A task takes one,
 * assigns it its partitions and gives it back; one that failed is closed instead. Consumers idle
 * for five minutes are closed (a flow that stopped, or fewer tasks than before).
 */
final class ConsumerPool {
    private static final long IDLE_MS = 5 * 60_000L;
    /**
     * A task only fetches ranges known to hold records, so a fetch that waits at the broker for more
     * (fetch.max.wait.ms, 500 ms by default) serves nothing. It costs a whole batch, though: after a
     * task's last poll the consumer has already sent its next fetch, at the end of the log, and the
     * next task given that consumer cannot fetch from that broker until the answer comes back
     * (p50 of a one-record batch 330 ms, of which ~250 ms that wait; docs/adr/0010-grouped-source.md).
     */
    static final long FETCH_WAIT_CAP_MS = 20L;
    /**
     * A real-time consumer's broker-side wait when the user sets none: a fetch still answers as soon as
     * a record is there (fetch.min.bytes), so a longer wait delays nothing, and each idle round walks
     * every assigned partition in the client. At Kafka's 500 ms, two tasks of 1,500 partitions spent
     * most of an idle real-time flow's task-thread CPU on empty rounds (ADR 0027 section 14).
     */
    static final long REAL_TIME_FETCH_WAIT_MS = 5_000L;
    /** Idle consumers by (settings, real-time): a real-time task keeps its consumer for a whole batch. */
    private static final Map<List<Object>, Deque<Idle>> POOL = new HashMap<>();

    private static final class Idle {
        final Consumer<byte[], byte[]> consumer;
        final long since;
        /** What it was assigned when given back: a real-time consumer keeps it (see {@link #release}). */
        final Set<TopicPartition> assigned;

        Idle(Consumer<byte[], byte[]> consumer, long since, Set<TopicPartition> assigned) {
            this.consumer = consumer;
            this.since = since;
            this.assigned = assigned;
        }
    }

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (POOL) {
                for (Deque<Idle> idle : POOL.values()) {
                    for (Idle i : idle) {
                        i.consumer.close(Duration.ofSeconds(2));
                    }
                }
                POOL.clear();
            }
        }, "mirrorspark-consumers-close"));
    }

    private ConsumerPool() {
    }

    /**
     * A consumer for one task. {@code realTime}: the task reads until its batch's deadline, so no
     * fetch is left for a next task to wait on; the broker's wait is the user's, or
     * {@link #REAL_TIME_FETCH_WAIT_MS} (a fetch still answers as soon as a record is there), not the
     * cap, which would cost each idle consumer fifty fetches a second.
     */
    static Consumer<byte[], byte[]> acquire(Map<String, String> settings, boolean realTime,
                                            Set<TopicPartition> wanted) {
        synchronized (POOL) {
            Deque<Idle> idle = POOL.get(List.of(settings, realTime));
            Idle found = idle == null ? null : take(idle, wanted);
            if (found != null) {
                return found.consumer;
            }
        }
        return create(settings, realTime);
    }

    /**
     * The idle consumer that last read {@code wanted}, else the most recent one. A real-time task
     * ends with a fetch in flight at the broker, held up to {@code fetch.max.wait.ms} for records of
     * its partitions; a node has one fetch in flight per consumer. The next batch's task for the same
     * partitions gets that fetch's answer as soon as a record comes; a task given another group's
     * consumer could send nothing until that wait ended (a record at a batch boundary waited 460-735
     * ms at 600 quiet partitions; ADR 0027 section 7).
     */
    private static Idle take(Deque<Idle> idle, Set<TopicPartition> wanted) {
        for (Iterator<Idle> it = idle.iterator(); it.hasNext(); ) {
            Idle i = it.next();
            if (i.assigned.equals(wanted)) {
                it.remove();
                return i;
            }
        }
        return idle.pollFirst();
    }

    /**
     * A task's consumer back to the pool, or closed if the task failed. A micro-batch consumer is
     * unassigned. A real-time one keeps its assignment, so the fetch it has in flight and what that
     * fetch brings stay valid for the next task of the same partitions (same positions: nothing is
     * fetched again; another position: Kafka's consumer drops the answer).
     */
    static void release(Map<String, String> settings, boolean realTime, Consumer<byte[], byte[]> consumer,
                        boolean failed) {
        if (failed) {
            consumer.close(Duration.ofSeconds(2));
            return;
        }
        Set<TopicPartition> assigned = Set.of();
        if (realTime) {
            // A HashSet, not Set.copyOf: its linear probing walks the runs of adjacent hash codes that
            // numbered topic names give, when built and when compared with the next task's partitions.
            assigned = java.util.Collections.unmodifiableSet(new java.util.HashSet<>(consumer.assignment()));
        } else {
            consumer.unsubscribe();
        }
        long now = System.currentTimeMillis();
        java.util.List<Consumer<byte[], byte[]>> expired = new java.util.ArrayList<>();
        synchronized (POOL) {
            POOL.computeIfAbsent(List.of(settings, realTime), s -> new ArrayDeque<>())
                .addFirst(new Idle(consumer, now, assigned));
            for (Deque<Idle> idle : POOL.values()) {
                for (Iterator<Idle> it = idle.iterator(); it.hasNext(); ) {
                    Idle i = it.next();
                    if (now - i.since > IDLE_MS) {
                        it.remove();
                        expired.add(i.consumer);
                    }
                }
            }
        }
        for (Consumer<byte[], byte[]> c : expired) {
            c.close(Duration.ofSeconds(2));
        }
    }

    /** The user's fetch.max.wait.ms, at most {@link #FETCH_WAIT_CAP_MS}. */
    static long fetchWait(String configured) {
        if (configured == null || configured.isBlank()) {
            return FETCH_WAIT_CAP_MS;
        }
        try {
            return Math.min(FETCH_WAIT_CAP_MS, Math.max(0L, Long.parseLong(configured.trim())));
        } catch (NumberFormatException e) {
            return FETCH_WAIT_CAP_MS;
        }
    }

    /**
     * {@link #REAL_TIME_FETCH_WAIT_MS}, under half the user's request timeout (a fetch held longer than
     * its request's timeout would be cut and sent again).
     */
    static long realTimeFetchWait(String requestTimeout) {
        long wait = REAL_TIME_FETCH_WAIT_MS;
        if (requestTimeout != null) {
            try {
                wait = Math.min(wait, Math.max(1L, Long.parseLong(requestTimeout.trim()) / 2));
            } catch (NumberFormatException e) {
                // the consumer refuses it when created; nothing to bound by
            }
        }
        return wait;
    }

    private static KafkaConsumer<byte[], byte[]> create(Map<String, String> settings, boolean realTime) {
        return new KafkaConsumer<>(config(settings, realTime));
    }

    /**
     * A task's consumer settings: the user's, without a group, with the fetch wait of its mode.
     *
     * <p>A real-time consumer also hands over in one poll everything its fetches brought
     * ({@code max.poll.records} unbounded): Kafka's consumer sends a node no fetch for a partition
     * while records of it are still buffered, and a node has one fetch in flight. Polls of 500 left
     * a busy partition's records buffered, so the next fetch asked only the caught-up partitions and
     * waited the user's {@code fetch.max.wait.ms} (500 ms) at the broker: a partition still behind got
     * one fetch (1 MB) per wait, about 1,000 records/s of 1 KiB once the others had caught up. The
     * poll's size changes nothing copied: the records are already fetched.
     */
    static Map<String, Object> config(Map<String, String> settings, boolean realTime) {
        Map<String, Object> config = new HashMap<>(settings);
        config.remove("group.id");
        config.put("enable.auto.commit", "false");
        config.put("auto.offset.reset", "none");
        if (realTime) {
            config.put("max.poll.records", String.valueOf(Integer.MAX_VALUE));
            if (!settings.containsKey("fetch.max.wait.ms")) {
                config.put("fetch.max.wait.ms", String.valueOf(realTimeFetchWait(settings.get("request.timeout.ms"))));
            }
        } else {
            config.put("fetch.max.wait.ms", String.valueOf(fetchWait(settings.get("fetch.max.wait.ms"))));
        }
        config.put("key.deserializer", ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return config;
    }
}
