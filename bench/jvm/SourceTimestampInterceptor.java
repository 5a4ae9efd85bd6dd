package io.mirrorspark.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

import io.mirrorspark.kafka.FlowStats;
import io.mirrorspark.kafka.OffsetRuns;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Gives a replicated record its source timestamp and reports where each source offset landed.
 *
 * Spark's Kafka sink has no timestamp column, so the pipeline carries the source timestamp
 * (milliseconds, ASCII decimal) in a private header. This interceptor runs inside the sink's
 * producer, removes that header and sets the record timestamp from it, so the target record has
 * exactly the source's headers and timestamp. Records without the header pass through untouched.
 *
 * When the flow is named (producer setting {@code mirrorspark.flow}) and a record carries its
 * source offset in a second private header, the interceptor queues that offset per target
 * partition and pairs it with the target offset in {@link #onAcknowledgement}: with the
 * idempotent producer, acknowledgements of one partition arrive in send order. The pairs become
 * {@link OffsetRuns}, which the driver drains after each batch for exact offset syncs. Every
 * acknowledgement also feeds {@link FlowStats} (count, bytes, record age, replication latency).
 *
 * For the benchmarks only (bench/interceptor_path.py): the product writes through its own sink
 * (docs/adr/0004-cluster-writer.md), so this class is not in mirrorspark's jar but in the benchmarks'
 * (build/bench-jvm/mirrorspark-bench.jar, compiled by bench/interceptor_path.py against it).
 */
public final class SourceTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {

    /** Must match bench/interceptor_path.py TIMESTAMP_HEADER. */
    public static final String TIMESTAMP_HEADER = "__mirrorspark.source.timestamp";
    /** Must match bench/interceptor_path.py OFFSET_HEADER. */
    public static final String OFFSET_HEADER = "__mirrorspark.source.offset";
    /** Producer setting naming the flow whose runs this producer reports. */
    public static final String FLOW_CONFIG = "mirrorspark.flow";

    private String flow;
    /** Per target partition, in send order: {source offset, source timestamp, bytes, age at send}. */
    private final Map<TopicPartition, ArrayDeque<long[]>> pending = new HashMap<>();

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        Long timestamp = null;
        Long sourceOffset = null;
        boolean found = false;
        RecordHeaders kept = new RecordHeaders();
        for (Header header : record.headers()) {
            if (TIMESTAMP_HEADER.equals(header.key())) {
                found = true;
                timestamp = parse(header.value());
            } else if (OFFSET_HEADER.equals(header.key())) {
                found = true;
                sourceOffset = parse(header.value());
            } else {
                kept.add(header);
            }
        }
        if (!found) {
            return record;
        }
        if (flow != null && record.partition() != null) {
            long ts = timestamp == null ? -1L : timestamp;
            long bytes = (record.key() == null ? 0 : record.key().length)
                + (record.value() == null ? 0 : record.value().length);
            long age = ts < 0 ? -1L : Math.max(0L, System.currentTimeMillis() - ts);
            long[] entry = {sourceOffset == null ? -1L : sourceOffset, ts, bytes, age};
            synchronized (pending) {
                pending.computeIfAbsent(new TopicPartition(record.topic(), record.partition()),
                    k -> new ArrayDeque<>()).add(entry);
            }
        }
        return new ProducerRecord<>(record.topic(), record.partition(), timestamp,
                record.key(), record.value(), kept);
    }

    /** Negative or missing values (e.g. NO_TIMESTAMP) leave the choice to the producer. */
    private static Long parse(byte[] value) {
        if (value == null) {
            return null;
        }
        long millis = Long.parseLong(new String(value, StandardCharsets.US_ASCII));
        return millis < 0 ? null : millis;
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
        if (flow == null || metadata == null || metadata.partition() < 0) {
            return;
        }
        TopicPartition tp = new TopicPartition(metadata.topic(), metadata.partition());
        long[] sent;
        synchronized (pending) {
            ArrayDeque<long[]> queue = pending.get(tp);
            sent = queue == null ? null : queue.poll();
        }
        if (sent == null) {
            return;
        }
        if (exception != null || !metadata.hasOffset()) {
            if (sent[0] >= 0) {
                OffsetRuns.broken(flow, tp.topic(), tp.partition());
            }
            return;
        }
        long latency = sent[1] < 0 ? -1L : Math.max(0L, System.currentTimeMillis() - sent[1]);
        FlowStats.record(flow, tp.topic(), tp.partition(), sent[2], sent[3], latency);
        if (sent[0] >= 0) {
            OffsetRuns.record(flow, tp.topic(), tp.partition(), sent[0], metadata.offset());
        }
    }

    @Override
    public void close() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Object name = configs.get(FLOW_CONFIG);
        flow = name == null ? null : name.toString();
    }
}
