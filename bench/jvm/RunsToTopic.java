package io.mirrorspark.bench;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.mirrorspark.kafka.OffsetRuns;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Writer candidate (b) of docs/adr/0004-cluster-writer.md, for bench/writer_bench.py only: Spark's
 * Kafka sink with SourceTimestampInterceptor pairing offsets in the executor, and this second
 * interceptor publishing the executor's runs to an internal topic when each task completes (after
 * the sink flushed), keyed by partition, so the driver can consume them.
 */
public final class RunsToTopic implements ProducerInterceptor<byte[], byte[]> {
    private static final Set<Long> REGISTERED = ConcurrentHashMap.newKeySet();
    private static final Map<String, KafkaProducer<String, String>> PUBLISHERS = new ConcurrentHashMap<>();

    private String flow;
    private String bootstrap;
    private String topic;

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        TaskContext task = TaskContext.get();
        if (task != null && REGISTERED.add(task.taskAttemptId())) {
            int partition = task.partitionId();
            task.addTaskCompletionListener(new TaskCompletionListener() {
                @Override
                public void onTaskCompletion(TaskContext context) {
                    publish(partition);
                }
            });
        }
        return record;
    }

    private void publish(int partition) {
        KafkaProducer<String, String> producer = PUBLISHERS.computeIfAbsent(bootstrap, b -> {
            Map<String, Object> conf = new HashMap<>();
            conf.put("bootstrap.servers", b);
            conf.put("acks", "all");
            conf.put("key.serializer", StringSerializer.class.getName());
            conf.put("value.serializer", StringSerializer.class.getName());
            return new KafkaProducer<>(conf);
        });
        try {
            producer.send(new ProducerRecord<>(topic, 0, String.valueOf(partition), OffsetRuns.drain(flow))).get();
        } catch (Exception e) {
            throw new IllegalStateException("publishing offset runs failed", e);
        }
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
    }

    @Override
    public void close() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
        flow = String.valueOf(configs.get("mirrorspark.flow"));
        bootstrap = String.valueOf(configs.get("mirrorspark.bench.runs.bootstrap"));
        topic = String.valueOf(configs.get("mirrorspark.bench.runs.topic"));
    }
}
