package io.mirrorspark.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

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
 * {@link OffsetRuns}, which the driver drains after each batch for exact offset syncs.
 */
public final class SourceTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {

    /** Must match mirrorspark.pipeline.record_columns.TIMESTAMP_HEADER. */
    public static final String TIMESTAMP_HEADER = "__mirrorspark.source.timestamp";
    /** Must match mirrorspark.pipeline.record_columns.OFFSET_HEADER. */
    public static final String OFFSET_HEADER = "__mirrorspark.source.offset";
    /** Producer setting naming the flow whose runs this producer reports. */
    public static final String FLOW_CONFIG = "mirrorspark.flow";

    private String flow;
    private final Map<TopicPartition, ArrayDeque<Long>> pending = new HashMap<>();

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
        if (flow != null && sourceOffset != null && record.partition() != null) {
            synchronized (pending) {
                pending.computeIfAbsent(new TopicPartition(record.topic(), record.partition()),
                    k -> new ArrayDeque<>()).add(sourceOffset);
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
        Long upstream;
        synchronized (pending) {
            ArrayDeque<Long> queue = pending.get(tp);
            upstream = queue == null ? null : queue.poll();
        }
        if (upstream == null) {
            return;
        }
        if (exception != null || !metadata.hasOffset()) {
            OffsetRuns.broken(flow, tp.topic(), tp.partition());
        } else {
            OffsetRuns.record(flow, tp.topic(), tp.partition(), upstream, metadata.offset());
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
