import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The replication ceiling of bench/mm2_vs_mirrorspark.py: a plain consume-and-produce loop, no
 * framework, with the benchmark's producer settings. {@code threads} loops (as MM2's tasks.max),
 * each with one consumer over its share of the partitions and one producer, copy every record with
 * its partition, key, value, headers and timestamp, then flush. Prints "N records/s" and the CPU
 * seconds this JVM used while copying (what a record costs without a framework).
 *
 * java -cp 'build/kafka-libs/*' bench/jvm/ReplicationCeiling.java SRC TOPIC DST REMOTE THREADS [k=v ...]
 */
public final class ReplicationCeiling {
    public static void main(String[] args) throws Exception {
        String source = args[0];
        String topic = args[1];
        String target = args[2];
        String remote = args[3];
        int threads = Integer.parseInt(args[4]);
        Map<String, Object> producerConf = new HashMap<>();
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            producerConf.put(kv[0], kv[1]);
        }
        producerConf.put("bootstrap.servers", target);
        producerConf.put("key.serializer", ByteArraySerializer.class.getName());
        producerConf.put("value.serializer", ByteArraySerializer.class.getName());
        Map<String, Object> consumerConf = new HashMap<>();
        consumerConf.put("bootstrap.servers", source);
        consumerConf.put("enable.auto.commit", "false");
        consumerConf.put("key.deserializer", ByteArrayDeserializer.class.getName());
        consumerConf.put("value.deserializer", ByteArrayDeserializer.class.getName());

        List<TopicPartition> all = new ArrayList<>();
        Map<TopicPartition, Long> ends;
        try (KafkaConsumer<byte[], byte[]> probe = new KafkaConsumer<>(consumerConf)) {
            for (PartitionInfo p : probe.partitionsFor(topic)) {
                all.add(new TopicPartition(topic, p.partition()));
            }
            ends = probe.endOffsets(all);
        }
        long total = ends.values().stream().mapToLong(Long::longValue).sum();
        AtomicReference<Exception> failed = new AtomicReference<>();
        List<Thread> loops = new ArrayList<>();
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpuStart = os.getProcessCpuTime();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            List<TopicPartition> mine = new ArrayList<>();
            for (int i = t; i < all.size(); i += threads) {
                mine.add(all.get(i));
            }
            Thread loop = new Thread(() -> copy(mine, ends, consumerConf, producerConf, remote, failed));
            loops.add(loop);
            loop.start();
        }
        for (Thread loop : loops) {
            loop.join();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double cpu = (os.getProcessCpuTime() - cpuStart) / 1e9;
        if (failed.get() != null) {
            throw failed.get();
        }
        System.out.printf("%d records in %.2f s: %.0f records/s, cpu %.2f s%n", total, seconds, total / seconds, cpu);
    }

    private static void copy(List<TopicPartition> mine, Map<TopicPartition, Long> ends, Map<String, Object> consumerConf,
                             Map<String, Object> producerConf, String remote, AtomicReference<Exception> failed) {
        if (mine.isEmpty()) {
            return;
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConf);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConf)) {
            consumer.assign(mine);
            consumer.seekToBeginning(mine);
            long left = 0;
            for (TopicPartition tp : mine) {
                left += ends.get(tp);
            }
            while (left > 0 && failed.get() == null) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    producer.send(new ProducerRecord<>(remote, r.partition(), r.timestamp(), r.key(), r.value(),
                        r.headers()), (m, e) -> {
                            if (e != null) {
                                failed.compareAndSet(null, e);
                            }
                        });
                    left--;
                }
            }
            producer.flush();
        } catch (Exception e) {
            failed.compareAndSet(null, e);
        }
    }
}
