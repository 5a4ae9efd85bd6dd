package io.mirrorspark.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Gives a replicated record its source timestamp.
 *
 * Spark's Kafka sink has no timestamp column, so the pipeline carries the source timestamp
 * (milliseconds, ASCII decimal) in a private header. This interceptor runs inside the sink's
 * producer, removes that header and sets the record timestamp from it, so the target record has
 * exactly the source's headers and timestamp. Records without the header pass through untouched.
 */
public final class SourceTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {

    /** Must match mirrorspark.pipeline.record_columns.TIMESTAMP_HEADER. */
    public static final String TIMESTAMP_HEADER = "__mirrorspark.source.timestamp";

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        Long timestamp = null;
        boolean found = false;
        RecordHeaders kept = new RecordHeaders();
        for (Header header : record.headers()) {
            if (TIMESTAMP_HEADER.equals(header.key())) {
                found = true;
                timestamp = parse(header.value());
            } else {
                kept.add(header);
            }
        }
        if (!found) {
            return record;
        }
        return new ProducerRecord<>(record.topic(), record.partition(), timestamp,
                record.key(), record.value(), kept);
    }

    /** Negative or missing source timestamps (NO_TIMESTAMP) leave the choice to the producer. */
    private static Long parse(byte[] value) {
        if (value == null) {
            return null;
        }
        long millis = Long.parseLong(new String(value, StandardCharsets.US_ASCII));
        return millis < 0 ? null : millis;
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
    }

    @Override
    public void close() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }
}
