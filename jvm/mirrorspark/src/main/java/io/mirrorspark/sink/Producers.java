package io.mirrorspark.sink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One producer per executor JVM and settings, shared by its tasks across batches (as Spark's own
 * Kafka sink pools them): creating one per task would pay a metadata round trip and a new
 * connection every batch. A producer that failed a send is retired: new tasks get a fresh one,
 * and it is closed once the last task using it is done, so tasks of other flows sharing it are
 * not cut off mid-write. A producer is retired the same way when every flow that used it asked for
 * other settings since (a topic's {@code max.message.bytes} grew: a larger {@code max.request.size}),
 * and closed once no task has used it for {@link #IDLE_MS} (its flow stopped or moved elsewhere).
 */
final class Producers {
    /** A producer no task used this long is closed. */
    static final long IDLE_MS = 10 * 60_000L;
    static final long SWEEP_EVERY_MS = 30_000L;
    private static final Pool<Producer<byte[], byte[]>> POOL =
        new Pool<>(Producers::create, p -> p.close(Duration.ofSeconds(10)), p -> p.close(Duration.ZERO));

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Producer<byte[], byte[]> producer : POOL.all()) {
                producer.close(Duration.ofSeconds(5));
            }
        }, "mirrorspark-producers-close"));
    }

    private Producers() {
    }

    /** The shared producer of {@code flow} for {@code settings}; every acquire is paired with a release. */
    static Producer<byte[], byte[]> acquire(String flow, Map<String, String> settings) {
        return POOL.acquire(flow, settings, System.currentTimeMillis());
    }

    /** A task is done with {@code producer}; {@code failed}: it saw a send fail, retire it. */
    static void release(Map<String, String> settings, Producer<byte[], byte[]> producer, boolean failed) {
        POOL.release(settings, producer, failed, System.currentTimeMillis());
    }

    /**
     * {@code flow} may write no more from this JVM: its producers are closed at once, dropping what
     * they held unsent; the tasks using them fail, another flow's sharing one too (its retried task
     * compares with the target: it sends nothing twice). Returns how many were closed.
     */
    static int abort(String flow) {
        return POOL.abort(flow);
    }

    /** Waits until every pooled producer has sent what it holds (acknowledged or failed). */
    static void flushAll() {
        for (Producer<byte[], byte[]> producer : POOL.all()) {
            try {
                producer.flush();
            } catch (RuntimeException e) {
                // closed meanwhile (retired by a failed send): it sends nothing more
            }
        }
    }

    /**
     * Per flow, the buffer memory its pooled producers in this JVM have free (Kafka's
     * {@code buffer-available-bytes}, summed): lines {@code flow TAB bytes}. A producer several flows
     * share counts for each.
     */
    static String bufferAvailable() {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, List<Producer<byte[], byte[]>>> entry : POOL.byFlow().entrySet()) {
            double free = 0;
            for (Producer<byte[], byte[]> producer : entry.getValue()) {
                for (Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> metric
                        : producer.metrics().entrySet()) {
                    if ("buffer-available-bytes".equals(metric.getKey().name())
                            && metric.getValue().metricValue() instanceof Number) {
                        free += ((Number) metric.getValue().metricValue()).doubleValue();
                    }
                }
            }
            out.append(entry.getKey()).append('\t').append(free).append('\n');
        }
        return out.toString();
    }

    private static Producer<byte[], byte[]> create(Map<String, String> settings) {
        Map<String, Object> config = new HashMap<>(settings);
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }

    /** The pool's bookkeeping, apart from Kafka: {@code P} is the producer, made and closed by the functions given. */
    static final class Pool<P> {
        private final Function<Map<String, String>, P> create;
        private final Consumer<P> close;
        private final Consumer<P> abort;
        private final Map<Map<String, String>, Lease<P>> leases = new HashMap<>();
        /** Retired producers still used by a task: closed at their last release. */
        private final Map<P, Lease<P>> retired = new IdentityHashMap<>();
        /** Per flow and target cluster, the settings it asked for last. */
        private final Map<String, Map<String, String>> current = new HashMap<>();
        private long sweptAt;

        private static final class Lease<P> {
            final P producer;
            final Set<String> flows = new HashSet<>();
            int users;
            long usedAt;

            Lease(P producer) {
                this.producer = producer;
            }
        }

        Pool(Function<Map<String, String>, P> create, Consumer<P> close) {
            this(create, close, close);
        }

        /** {@code abort}: closes a producer without sending what it holds ({@link #abort(String)}). */
        Pool(Function<Map<String, String>, P> create, Consumer<P> close, Consumer<P> abort) {
            this.create = create;
            this.close = close;
            this.abort = abort;
        }

        /** Closes, with {@code abort}, every producer {@code flow} uses (pooled or retired); returns how many. */
        int abort(String flow) {
            List<P> aborting = new ArrayList<>();
            String prefix = flow + '\u0000';
            synchronized (this) {
                for (Iterator<Lease<P>> it = leases.values().iterator(); it.hasNext();) {
                    Lease<P> lease = it.next();
                    if (usedBy(lease, prefix)) {
                        it.remove();
                        aborting.add(lease.producer);
                    }
                }
                for (Iterator<Lease<P>> it = retired.values().iterator(); it.hasNext();) {
                    Lease<P> lease = it.next();
                    if (usedBy(lease, prefix)) {
                        it.remove();
                        aborting.add(lease.producer);
                    }
                }
                current.keySet().removeIf(who -> who.startsWith(prefix));
            }
            aborting.forEach(abort);
            return aborting.size();
        }

        private static boolean usedBy(Lease<?> lease, String prefix) {
            return lease.flows.stream().anyMatch(who -> who.startsWith(prefix));
        }

        P acquire(String flow, Map<String, String> settings, long now) {
            List<P> closing = new ArrayList<>();
            P producer;
            synchronized (this) {
                sweep(now, closing);
                String who = flow + '\u0000' + settings.get("bootstrap.servers");
                Map<String, String> before = current.put(who, settings);
                if (before != null && !before.equals(settings)) {
                    Lease<P> old = leases.get(before);
                    if (old != null) {
                        old.flows.remove(who);
                        if (old.flows.isEmpty()) {  // no flow asks for these settings any more
                            leases.remove(before);
                            retire(old, closing);
                        }
                    }
                }
                Lease<P> lease = leases.computeIfAbsent(settings, s -> new Lease<>(create.apply(s)));
                lease.flows.add(who);
                lease.users++;
                lease.usedAt = now;
                producer = lease.producer;
            }
            closing.forEach(close);
            return producer;
        }

        void release(Map<String, String> settings, P producer, boolean failed, long now) {
            List<P> closing = new ArrayList<>();
            synchronized (this) {
                Lease<P> lease = leases.get(settings);
                boolean pooled = lease != null && lease.producer == producer;
                if (!pooled) {
                    lease = retired.get(producer);
                    if (lease == null) {
                        return;
                    }
                }
                lease.users--;
                lease.usedAt = now;
                if (pooled && failed) {
                    leases.remove(settings);
                    retire(lease, closing);
                } else if (!pooled && lease.users <= 0) {
                    retired.remove(producer);
                    closing.add(producer);
                }
            }
            closing.forEach(close);
        }

        /** Out of the pool: closed now when no task uses it, else at its last release. */
        private void retire(Lease<P> lease, List<P> closing) {
            if (lease.users <= 0) {
                closing.add(lease.producer);
            } else {
                retired.put(lease.producer, lease);
            }
        }

        private void sweep(long now, List<P> closing) {
            if (now - sweptAt < SWEEP_EVERY_MS) {
                return;
            }
            sweptAt = now;
            for (Iterator<Lease<P>> it = leases.values().iterator(); it.hasNext();) {
                Lease<P> lease = it.next();
                if (lease.users <= 0 && now - lease.usedAt >= IDLE_MS) {
                    it.remove();
                    closing.add(lease.producer);
                }
            }
        }

        /** The pooled producers per flow that uses them. */
        synchronized Map<String, List<P>> byFlow() {
            Map<String, List<P>> out = new HashMap<>();
            for (Lease<P> lease : leases.values()) {
                for (String who : lease.flows) {
                    out.computeIfAbsent(who.substring(0, who.indexOf('\u0000')), f -> new ArrayList<>()).add(lease.producer);
                }
            }
            return out;
        }

        /** Every producer still open: pooled, and retired ones a task still uses. */
        synchronized List<P> all() {
            List<P> out = new ArrayList<>();
            for (Lease<P> lease : leases.values()) {
                out.add(lease.producer);
            }
            out.addAll(retired.keySet());
            return out;
        }
    }
}
