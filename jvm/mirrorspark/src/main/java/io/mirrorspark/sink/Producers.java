package io.mirrorspark.sink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One producer per executor JVM and settings, shared by its tasks across batches (as Spark's own
 * Kafka sink pools them): creating one per task would pay a metadata round trip and a new
 * connection every batch. A producer that failed a send is retired: new tasks get a fresh one,
 * and it is closed once the last task using it is done, so tasks of other flows sharing it are
 * not cut off mid-write.
 */
final class Producers {
    private static final Map<Map<String, String>, Lease> POOL = new HashMap<>();

    private static final class Lease {
        final KafkaProducer<byte[], byte[]> producer;
        int users;
        boolean retired;

        Lease(KafkaProducer<byte[], byte[]> producer) {
            this.producer = producer;
        }
    }

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (POOL) {
                for (Lease lease : POOL.values()) {
                    lease.producer.close(Duration.ofSeconds(5));
                }
            }
        }, "mirrorspark-producers-close"));
    }

    private Producers() {
    }

    /** The shared producer for {@code settings}; every acquire is paired with a release. */
    static KafkaProducer<byte[], byte[]> acquire(Map<String, String> settings) {
        synchronized (POOL) {
            Lease lease = POOL.computeIfAbsent(settings, s -> new Lease(create(s)));
            lease.users++;
            return lease.producer;
        }
    }

    /** A task is done with {@code producer}; {@code failed}: it saw a send fail, retire it. */
    static void release(Map<String, String> settings, KafkaProducer<byte[], byte[]> producer, boolean failed) {
        Lease closing = null;
        synchronized (POOL) {
            Lease lease = POOL.get(settings);
            if (lease != null && lease.producer == producer) {
                if (failed) {
                    lease.retired = true;
                    POOL.remove(settings);
                }
            } else {
                lease = RETIRED.get(producer);
            }
            if (lease == null) {
                return;
            }
            lease.users--;
            if (lease.retired) {
                if (lease.users <= 0) {
                    RETIRED.remove(producer);
                    closing = lease;
                } else {
                    RETIRED.put(producer, lease);
                }
            }
        }
        if (closing != null) {
            closing.producer.close(Duration.ofSeconds(10));
        }
    }

    private static final Map<KafkaProducer<byte[], byte[]>, Lease> RETIRED = new HashMap<>();

    /** Waits until every pooled producer has sent what it holds (acknowledged or failed). */
    static void flushAll() {
        List<KafkaProducer<byte[], byte[]>> all = new ArrayList<>();
        synchronized (POOL) {
            for (Lease lease : POOL.values()) {
                all.add(lease.producer);
            }
            all.addAll(RETIRED.keySet());
        }
        for (KafkaProducer<byte[], byte[]> producer : all) {
            try {
                producer.flush();
            } catch (RuntimeException e) {
                // closed meanwhile (retired by a failed send): it sends nothing more
            }
        }
    }

    private static KafkaProducer<byte[], byte[]> create(Map<String, String> settings) {
        Map<String, Object> config = new HashMap<>(settings);
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }
}
