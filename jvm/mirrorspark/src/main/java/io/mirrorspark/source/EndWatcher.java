package io.mirrorspark.source;

import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Why: an idle query asks its source for new records ten times a second, and asking the brokers
 * for the end of thousands of partitions each time was most of what an idle flow cost (a
 * ListOffsets request, and maps of every partition built and compared, 10 times a second). This
 * thread keeps a consumer positioned at the ends the driver saw last, with nothing new: its fetch
 * waits on the broker until a record arrives ({@code fetch.max.wait.ms}), and Kafka's incremental
 * fetch sessions make each idle round trip nearly empty. While nothing arrived, the driver may
 * skip asking for the ends; the first record wakes it. Records the watcher fetches are dropped
 * (the tasks read them); it reads at most one small fetch per quiet spell, then waits to be armed again.
 */
final class EndWatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EndWatcher.class);

    private final Consumer<byte[], byte[]> consumer;  // used by the watcher thread only
    private final Duration pollTimeout;
    private final Thread thread;
    private final Object lock = new Object();
    private Map<TopicPartition, Long> wanted;  // positions to watch from; null: disarmed
    private long generation;                   // bumped by every arm and disarm
    private long stirred = -1;                 // the generation in which something arrived
    private boolean closed;

    EndWatcher(Consumer<byte[], byte[]> consumer, Duration pollTimeout, String name) {
        this.consumer = consumer;
        this.pollTimeout = pollTimeout;
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * Watch for anything after {@code ends} (each partition's next offset); quiet until it arrives.
     * Armed again with the ends it is quietly watching (the driver's periodic check found nothing),
     * it keeps its fetch in flight: no copy, no seek of every partition, no new fetch session.
     */
    void arm(Map<TopicPartition, Long> ends) {
        synchronized (lock) {
            if (!closed && wanted != null && stirred != generation && wanted.equals(ends)) {
                return;
            }
            // A HashMap, not Map.copyOf: numbered topic names give partitions runs of adjacent hash codes,
            // which the immutable map's linear probing walks end to end (most of a quiet check's CPU at
            // 3,000 partitions, JFR).
            wanted = Collections.unmodifiableMap(new HashMap<>(ends));
            generation++;
            lock.notifyAll();
        }
        consumer.wakeup();  // a poll at the old positions must not answer for the new ones
    }

    /** Records are flowing: the driver asks for the ends itself and the watcher reads nothing. */
    void disarm() {
        synchronized (lock) {
            if (wanted != null) {
                wanted = null;
                generation++;
                lock.notifyAll();
            }
        }
    }

    /** True while armed and nothing arrived after the ends it was armed with. */
    boolean quiet() {
        synchronized (lock) {
            return wanted != null && stirred != generation;
        }
    }

    /**
     * Waits at most {@code millis} while armed and nothing arrived; returns at once on the first
     * record, a disarm or close. The driver's idle query waits here instead of asking again every
     * polling delay: fewer loops of Spark's stream thread, and the first record is seen sooner.
     */
    void awaitStir(long millis) throws InterruptedException {
        long until = System.currentTimeMillis() + millis;
        synchronized (lock) {
            long left = millis;
            while (!closed && wanted != null && stirred != generation && left > 0) {
                lock.wait(left);
                left = until - System.currentTimeMillis();
            }
        }
    }

    private void stir(long gen) {
        synchronized (lock) {
            if (gen == generation) {
                stirred = gen;
                lock.notifyAll();
            }
        }
    }

    private void run() {
        long applied = -1;
        try {
            while (true) {
                Map<TopicPartition, Long> take;
                long gen;
                synchronized (lock) {
                    while (!closed && (wanted == null || stirred == generation
                        || (applied == generation && wanted.isEmpty()))) {
                        lock.wait();
                    }
                    if (closed) {
                        return;
                    }
                    take = wanted;
                    gen = generation;
                }
                try {
                    if (gen != applied) {
                        if (!consumer.assignment().equals(take.keySet())) {
                            consumer.assign(new HashSet<>(take.keySet()));
                        }
                        for (Map.Entry<TopicPartition, Long> e : take.entrySet()) {
                            consumer.seek(e.getKey(), e.getValue());
                        }
                        applied = gen;
                        if (take.isEmpty()) {
                            continue;
                        }
                    }
                    if (!consumer.poll(pollTimeout).isEmpty()) {
                        stir(gen);
                    }
                } catch (WakeupException e) {
                    // arm() or close(): look at what is wanted now
                } catch (RuntimeException e) {
                    // e.g. a partition whose records were removed or whose topic went away: the driver asks the brokers
                    LOG.debug("end watcher: {}", e.toString());
                    stir(gen);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
        }
        consumer.wakeup();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
