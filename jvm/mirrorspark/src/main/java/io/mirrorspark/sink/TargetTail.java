package io.mirrorspark.sink;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

import io.mirrorspark.kafka.ConnectionSettings;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The records an interrupted attempt of this batch already wrote to one target partition: target
 * offsets {@code from .. to-1}, read lazily as the re-run's rows arrive. A row equal to the next
 * of them (key, value, headers, timestamp) is paired with its offset instead of being sent again;
 * the first row that differs ends the comparison, and the target records not matched by then are
 * counted as re-copied. Only matching content is skipped, so nothing can be skipped that the
 * target does not hold (docs/adr/0005-data-integrity.md).
 */
final class TargetTail implements AutoCloseable {
    private static final long GIVE_UP_MS = 30_000L;
    /** {@code to}: the partition's end when the comparison starts (a retried task attempt). */
    static final long END_NOW = -1L;

    final long from;
    final long to;
    private final Consumer<byte[], byte[]> consumer;
    private Iterator<ConsumerRecord<byte[], byte[]>> buffered = Collections.emptyIterator();
    private long position;
    long matched;
    long recopied;
    private boolean done;
    /** Active/active on the same names: the target's own records (no path header) sit between this
     *  flow's copies; they are passed over, not compared. */
    private final boolean copiesOnly;

    /** {@code consumer}: a consumer of the target cluster, assigned nothing yet; the tail closes it. */
    TargetTail(Consumer<byte[], byte[]> consumer, String topic, int partition, long from, long to,
               boolean copiesOnly) {
        this.from = from;
        this.copiesOnly = copiesOnly;
        this.position = from;
        this.consumer = consumer;
        TopicPartition tp = new TopicPartition(topic, partition);
        consumer.assign(Collections.singletonList(tp));
        consumer.seek(tp, from);
        this.to = to == END_NOW ? consumer.endOffsets(Collections.singletonList(tp), Duration.ofSeconds(30))
            .getOrDefault(tp, from) : to;
    }

    /** A consumer of the target partition, on the producer's connection, that reads what is not committed too. */
    static Consumer<byte[], byte[]> consumer(Map<String, String> producerSettings, String topic, int partition) {
        Map<String, Object> conf = ConnectionSettings.of(producerSettings);
        conf.put("enable.auto.commit", "false");
        conf.put("isolation.level", "read_uncommitted");
        conf.put("client.id", "mirrorspark-resume-" + topic + "-" + partition);
        return new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * The ends of target partitions ({@link WriteSettings#key} keys) now, in one request: where a
     * real-time batch with a retried task attempt finds what an earlier attempt wrote past its report.
     */
    static Map<String, Long> ends(Map<String, String> producerSettings, Collection<String> keys) {
        Map<TopicPartition, String> wanted = new HashMap<>();
        for (String key : keys) {
            int cut = key.lastIndexOf('\u0000');
            wanted.put(new TopicPartition(key.substring(0, cut), Integer.parseInt(key.substring(cut + 1))), key);
        }
        Map<String, Long> out = new HashMap<>();
        if (wanted.isEmpty()) {
            return out;
        }
        try (Consumer<byte[], byte[]> consumer = consumer(producerSettings, "ends", 0)) {
            consumer.endOffsets(wanted.keySet(), Duration.ofSeconds(30))
                .forEach((tp, end) -> out.put(wanted.get(tp), end));
        }
        return out;
    }

    boolean active() {
        return !done;
    }

    /** The next target offset to compare: where a later real-time batch's writer carries on. */
    long resumeAt() {
        return position;
    }

    /**
     * The target offset holding a record equal to this row, or -1 once the comparison has ended
     * (the row and every later one of this partition must be sent).
     */
    long match(byte[] key, byte[] value, Headers headers, long timestamp) {
        if (done) {
            return -1L;
        }
        ConsumerRecord<byte[], byte[]> next = next();
        if (next != null && Arrays.equals(next.key(), key) && Arrays.equals(next.value(), value)
            && sameTimestamp(next, timestamp) && sameHeaders(next.headers(), headers)) {
            matched++;
            position = next.offset() + 1;
            if (position >= to) {
                finish();
            }
            return next.offset();
        }
        long unmatched = Math.max(0L, to - position);
        if (copiesOnly) {  // only this flow's copies count, not the target's own records among them
            unmatched = next == null ? 0L : 1L + countCopies();
        }
        finish();
        recopied = unmatched;  // the rows from here on are sent again, over what the target holds
        return -1L;
    }

    private ConsumerRecord<byte[], byte[]> next() {
        while (true) {
            ConsumerRecord<byte[], byte[]> record = nextRecord();
            if (record == null || !copiesOnly || Provenance.path(record.headers()) != null) {
                return record;
            }
            position = record.offset() + 1;  // the target's own record: not one this flow wrote
        }
    }

    private ConsumerRecord<byte[], byte[]> nextRecord() {
        long deadline = System.currentTimeMillis() + GIVE_UP_MS;
        while (!buffered.hasNext()) {
            if (position >= to || System.currentTimeMillis() > deadline) {
                return null;
            }
            buffered = consumer.poll(Duration.ofMillis(500)).iterator();
        }
        ConsumerRecord<byte[], byte[]> record = buffered.next();
        return record.offset() < to ? record : null;
    }

    /** This flow's copies after the mismatched one, up to {@code to}: they are written again. */
    private long countCopies() {
        long copies = 0;
        for (ConsumerRecord<byte[], byte[]> r = next(); r != null; r = next()) {
            copies++;
            position = r.offset() + 1;
        }
        return copies;
    }

    /** A remote topic with LogAppendTime stamps records itself: only CreateTime can be compared. */
    private static boolean sameTimestamp(ConsumerRecord<byte[], byte[]> record, long timestamp) {
        return timestamp < 0 || record.timestampType() == TimestampType.LOG_APPEND_TIME
            || record.timestamp() == timestamp;
    }

    private static boolean sameHeaders(Headers a, Headers b) {
        Iterator<Header> x = a.iterator();
        Iterator<Header> y = b.iterator();
        while (x.hasNext() && y.hasNext()) {
            Header h = x.next();
            Header g = y.next();
            if (!h.key().equals(g.key()) || !Arrays.equals(h.value(), g.value())) {
                return false;
            }
        }
        return !x.hasNext() && !y.hasNext();
    }

    /** Ends the comparison (a mismatch, or the task's rows ran out) and lets the consumer go. */
    void finish() {
        if (!done) {
            done = true;
            consumer.close(Duration.ofSeconds(2));
        }
    }

    @Override
    public void close() {
        finish();
    }
}
