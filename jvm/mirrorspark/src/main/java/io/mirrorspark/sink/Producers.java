package io.mirrorspark.sink;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One producer per executor JVM and settings, shared by its tasks across batches (as Spark's own
 * Kafka sink pools them): creating one per task would pay a metadata round trip and a new
 * connection every batch. A producer that failed is discarded so the retry starts clean.
 */
final class Producers {
    private static final Map<Map<String, String>, KafkaProducer<byte[], byte[]>> POOL = new ConcurrentHashMap<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (KafkaProducer<byte[], byte[]> p : POOL.values()) {
                p.close(Duration.ofSeconds(5));
            }
        }, "mirrorspark-producers-close"));
    }

    private Producers() {
    }

    static KafkaProducer<byte[], byte[]> get(Map<String, String> settings) {
        return POOL.computeIfAbsent(settings, Producers::create);
    }

    private static KafkaProducer<byte[], byte[]> create(Map<String, String> settings) {
        Map<String, Object> config = new HashMap<>(settings);
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }

    static void discard(Map<String, String> settings, KafkaProducer<byte[], byte[]> producer) {
        if (POOL.remove(settings, producer)) {
            producer.close(Duration.ZERO);
        }
    }
}
