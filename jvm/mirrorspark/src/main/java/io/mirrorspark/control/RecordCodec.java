package io.mirrorspark.control;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/**
 * Records across py4j as one byte array per batch (big-endian, lengths as int, -1 for null), so a
 * poll of thousands of records is one call and no Python object per field: Python's side unpacks it
 * with {@code struct}. A batch: count, then per record topic, partition, offset, timestamp type
 * (0 none, 1 create, 2 log append), timestamp, key, value, header count, then each header's key and value;
 * then the count of partitions read to their end, each as topic, partition, position (librdkafka's
 * partition EOF events, which the readers of internal topics stop on).
 */
final class RecordCodec {
    private RecordCodec() {
    }

    static byte[] encode(List<ConsumerRecord<byte[], byte[]>> records) {
        return encode(records, List.of());
    }

    /** {@code ends}: partitions read to their end, with the position there. */
    static byte[] encode(List<ConsumerRecord<byte[], byte[]>> records, List<Map.Entry<TopicPartition, Long>> ends) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + records.size() * 64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(records.size());
            for (ConsumerRecord<byte[], byte[]> r : records) {
                text(out, r.topic());
                out.writeInt(r.partition());
                out.writeLong(r.offset());
                out.writeByte(r.timestampType() == TimestampType.CREATE_TIME ? 1
                    : r.timestampType() == TimestampType.LOG_APPEND_TIME ? 2 : 0);
                out.writeLong(r.timestamp());
                blob(out, r.key());
                blob(out, r.value());
                Header[] headers = r.headers().toArray();
                out.writeInt(headers.length);
                for (Header h : headers) {
                    text(out, h.key());
                    blob(out, h.value());
                }
            }
            out.writeInt(ends.size());
            for (var end : ends) {
                text(out, end.getKey().topic());
                out.writeInt(end.getKey().partition());
                out.writeLong(end.getValue());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** Headers Python packed: count, then each key and value as {@link #encode} writes them. */
    static RecordHeaders headers(byte[] packed) {
        RecordHeaders headers = new RecordHeaders();
        if (packed == null || packed.length == 0) {
            return headers;
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(packed))) {
            int count = in.readInt();
            for (int i = 0; i < count; i++) {
                byte[] key = readBlob(in);
                headers.add(new String(key == null ? new byte[0] : key, StandardCharsets.UTF_8), readBlob(in));
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("packed headers are malformed: " + e.getMessage(), e);
        }
        return headers;
    }

    /** One record Python asked to send: its id for the outcome, where it goes and what it carries. */
    record Send(long id, String topic, int partition, byte[] key, byte[] value, byte[] headers, long timestamp) {
    }

    /** Sends Python packed: count, then each one's id (long), topic, partition (int, -1 any), key, value,
     *  packed headers (blobs as {@link #encode} writes them) and timestamp (long, -1 none). */
    static List<Send> sends(byte[] packed) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(packed))) {
            int count = in.readInt();
            List<Send> out = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                long id = in.readLong();
                byte[] topic = readBlob(in);
                int partition = in.readInt();
                out.add(new Send(id, new String(topic == null ? new byte[0] : topic, StandardCharsets.UTF_8), partition,
                    readBlob(in), readBlob(in), readBlob(in), in.readLong()));
            }
            return out;
        } catch (IOException e) {
            throw new IllegalArgumentException("packed sends are malformed: " + e.getMessage(), e);
        }
    }

    private static void text(DataOutputStream out, String value) throws IOException {
        blob(out, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }

    private static void blob(DataOutputStream out, byte[] value) throws IOException {
        if (value == null) {
            out.writeInt(-1);
        } else {
            out.writeInt(value.length);
            out.write(value);
        }
    }

    private static byte[] readBlob(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 0) {
            return null;
        }
        byte[] value = new byte[length];
        in.readFully(value);
        return value;
    }
}
