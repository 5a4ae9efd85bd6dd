package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.mirrorspark.kafka.OffsetRunList;
import io.mirrorspark.kafka.OffsetRuns;
import io.mirrorspark.kafka.PollBoundary;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One task's writer without brokers or a running Spark: rows in the Kafka source's schema, as
 * Spark hands them (one reused {@code UnsafeRow}), written through Kafka's mock clients. What is
 * sent (partition, key, value, headers, timestamp), the runs its commit message pairs, a resumed or
 * retried writer that sends only what the target's tail does not hold already, a fenced writer that
 * refuses, and the exactly-once path's transactions with their progress.
 */
final class MirrorDataWriterTest {
    private static final StructType SCHEMA = new StructType()
        .add("key", DataTypes.BinaryType).add("value", DataTypes.BinaryType)
        .add("topic", DataTypes.StringType).add("partition", DataTypes.IntegerType)
        .add("offset", DataTypes.LongType).add("timestamp", DataTypes.TimestampType)
        .add("timestampType", DataTypes.IntegerType)
        .add("headers", DataTypes.createArrayType(new StructType()
            .add("key", DataTypes.StringType).add("value", DataTypes.BinaryType)));
    /** Source topic t is copied to remote topic a.t (two partitions); rows of u are not copied. */
    private static final String REMOTE = "a.t";
    private static final long T0 = 1_700_000_000_000L;
    private static final String FACTORY_MODE = "spark.sql.codegen.factoryMode";

    /** Spark's interpreted projection makes the same {@code UnsafeRow}s as generated code, without seconds of compiling. */
    @BeforeAll
    static void interpretedProjections() {
        SQLConf.get().setConfString(FACTORY_MODE, "NO_CODEGEN");
    }

    @AfterAll
    static void generatedProjectionsAgain() {
        SQLConf.get().unsetConf(FACTORY_MODE);
    }

    /** The mock clients a writer is given, and what it gave back. */
    private static final class Clients implements WriterClients {
        final MockProducer<byte[], byte[]> producer;
        final Map<TopicPartition, MockConsumer<byte[], byte[]>> tails = new HashMap<>();
        /** The task's transactional producer, and each target partition's committed progress. */
        Transactions.Entry transactional;
        final Map<TopicPartition, Progress> progress = new HashMap<>();
        final List<String> progressAsked = new ArrayList<>();
        final List<TopicPartition> tailsAsked = new ArrayList<>();
        final List<String> released = new ArrayList<>();

        Clients() {
            this(producer(true));
        }

        Clients(MockProducer<byte[], byte[]> producer) {
            this.producer = producer;
        }

        @Override
        public Producer<byte[], byte[]> acquireProducer(WriteSettings settings) {
            return producer;
        }

        @Override
        public void releaseProducer(WriteSettings settings, Producer<byte[], byte[]> given, boolean failed) {
            released.add(failed ? "producer, failed" : "producer");
        }

        @Override
        public Transactions.Entry acquireTransactional(WriteSettings settings, int task) {
            return transactional;
        }

        @Override
        public Progress progress(WriteSettings settings, String topic, int partition, boolean fresh, long batch) {
            TopicPartition tp = new TopicPartition(topic, partition);
            progressAsked.add(tp + (fresh ? ", fresh" : ""));
            return Progress.forTopics(progress.getOrDefault(tp, Progress.NONE), settings.topicsOf(topic));
        }

        @Override
        public void committed(WriteSettings settings, String topic, int partition, Progress committed, long batch) {
            progress.put(new TopicPartition(topic, partition), committed);
        }

        @Override
        public void forget(WriteSettings settings, String topic, int partition) {
            released.add("forgot " + topic + "-" + partition);
        }

        @Override
        public void releaseTransactional(WriteSettings settings, Transactions.Entry entry, boolean broken) {
            released.add(entry.id + (broken ? ", broken" : ""));
        }

        @Override
        public Consumer<byte[], byte[]> tailConsumer(WriteSettings settings, String topic, int partition) {
            TopicPartition tp = new TopicPartition(topic, partition);
            tailsAsked.add(tp);
            return tails.get(tp);
        }
    }

    /** A producer to the target's a.t; {@code autoComplete}: each send is acknowledged at once, else by the test. */
    private static MockProducer<byte[], byte[]> producer(boolean autoComplete) {
        Node node = new Node(0, "localhost", 9092);
        List<PartitionInfo> parts = List.of(new PartitionInfo(REMOTE, 0, node, new Node[] {node}, new Node[] {node}),
            new PartitionInfo(REMOTE, 1, node, new Node[] {node}, new Node[] {node}));
        return new MockProducer<>(new Cluster("target", List.of(node), parts, Set.of(), Set.of()), autoComplete,
            new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Partition p of a.t already holds {@code held[p]} records: the producer's next sends land after them. */
    private static void fill(MockProducer<byte[], byte[]> producer, long... held) {
        for (int p = 0; p < held.length; p++) {
            for (long i = 0; i < held[p]; i++) {
                producer.send(new ProducerRecord<>(REMOTE, p, null, new byte[0]));
            }
        }
        producer.flush();
        producer.clear();
    }

    private static Map<String, String> options(String flow) {
        Map<String, String> options = new HashMap<>();
        options.put("flow", flow);
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("remoteTopics", "t\t" + REMOTE);
        return options;
    }

    private static byte[] bytes(String text) {
        return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
    }

    /** Source record {@code offset} of t: key k&lt;offset&gt;, value v&lt;offset&gt;, stamped T0 + offset, one header. */
    private static Object[] record(int partition, long offset) {
        return record("t", partition, offset, "v" + offset);
    }

    private static Object[] record(String topic, int partition, long offset, String value) {
        return new Object[] {bytes("k" + offset), bytes(value), topic, partition, offset, T0 + offset,
            new String[] {"trace", "id-" + offset}};
    }

    /**
     * Writes each row as Spark does: one {@code UnsafeRow}, overwritten for every row. A row is
     * {@code key, value, topic, partition, offset, timestamp (ms, null: none), header key/value pairs (null: none)}.
     */
    private static void write(MirrorDataWriter writer, Object[]... rows) throws IOException {
        UnsafeProjection unsafe = UnsafeProjection.create(SCHEMA);
        for (Object[] r : rows) {
            String[] h = (String[]) r[6];
            GenericArrayData headers = null;
            if (h != null) {
                Object[] structs = new Object[h.length / 2];
                for (int i = 0; i < structs.length; i++) {
                    structs[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(h[2 * i]), bytes(h[2 * i + 1])});
                }
                headers = new GenericArrayData(structs);
            }
            writer.write(unsafe.apply(new GenericInternalRow(new Object[] {r[0], r[1], UTF8String.fromString((String) r[2]),
                r[3], r[4], r[5] == null ? null : (Long) r[5] * 1_000L, 0, headers})));
        }
    }

    /** The target record a previous attempt wrote for {@code row} at {@code offset}. */
    private static ConsumerRecord<byte[], byte[]> onTarget(Object[] row, long offset) {
        String[] h = (String[]) row[6];
        RecordHeaders headers = new RecordHeaders();
        for (int i = 0; h != null && i < h.length; i += 2) {
            headers.add(new RecordHeader(h[i], bytes(h[i + 1])));
        }
        byte[] key = (byte[]) row[0];
        byte[] value = (byte[]) row[1];
        return new ConsumerRecord<>(REMOTE, (Integer) row[3], offset, (Long) row[5], TimestampType.CREATE_TIME,
            key == null ? -1 : key.length, value == null ? -1 : value.length, key, value, headers, Optional.empty());
    }

    /** A.t-{@code partition} holds {@code held} (starting at {@code from}) and ends at {@code end}. */
    private static void tail(Clients clients, int partition, long from, long end, Object[]... held) {
        TopicPartition tp = new TopicPartition(REMOTE, partition);
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.assign(List.of(tp));
        consumer.updateBeginningOffsets(Map.of(tp, 0L));
        consumer.updateEndOffsets(Map.of(tp, end));
        for (int i = 0; i < held.length; i++) {
            consumer.addRecord(onTarget(held[i], from + i));
        }
        clients.tails.put(tp, consumer);
    }

    private static Map<String, PartitionAcks> report(WriterCommitMessage message) {
        Map<String, PartitionAcks> out = new HashMap<>();
        for (PartitionAcks part : ((TaskReport) message).partitions) {
            out.put(part.topic + "-" + part.partition, part);
        }
        return out;
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** A sent record as {@code partition key value timestamp [headers]}. */
    private static String sent(ProducerRecord<byte[], byte[]> r) {
        List<String> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(h.key() + "=" + text(h.value()));
        }
        return r.topic() + "-" + r.partition() + " " + text(r.key()) + " " + text(r.value()) + " " + r.timestamp() + " " + headers;
    }

    private static List<String> sent(MockProducer<byte[], byte[]> producer) {
        List<String> out = new ArrayList<>();
        producer.history().forEach(r -> out.add(sent(r)));
        return out;
    }

    @Test
    void eachRowIsSentAsItCameAndItsOffsetsArePairedInTheCommitMessage() throws IOException {
        Clients clients = new Clients();
        fill(clients.producer, 40, 7);
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-plain"));
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        // u's row has the sizes of t's: in the reused row its topic lands where theirs did.
        write(writer, record(0, 10), record(0, 11), record("u", 0, 13, "v13"), record(0, 12),
            new Object[] {null, bytes("v5"), "t", 1, 5L, null, null},  // no key, no timestamp, no headers
            new Object[] {bytes("k6"), null, "t", 1, 6L, T0, new String[] {"n", null}});  // a tombstone, a null header
        WriterCommitMessage message = writer.commit();
        writer.close();

        assertEquals(List.of(
            "a.t-0 k10 v10 " + (T0 + 10) + " [trace=id-10]",
            "a.t-0 k11 v11 " + (T0 + 11) + " [trace=id-11]",
            "a.t-0 k12 v12 " + (T0 + 12) + " [trace=id-12]",
            "a.t-1 null v5 null []",
            "a.t-1 k6 null " + T0 + " [n=null]"), sent(clients.producer),
            "each row to its remote topic and partition, key, value, timestamp in ms and headers as they came");
        Map<String, PartitionAcks> parts = report(message);
        assertEquals(OffsetRunList.of(10, 40, 3), parts.get("a.t-0").runs(), "three records, one run after the 40 held");
        assertEquals(OffsetRunList.of(5, 7, 2), parts.get("a.t-1").runs());
        assertEquals(2, parts.size(), "rows of a topic not copied are not reported");
        assertEquals(0, parts.get("a.t-0").resumed, "nothing resumed");
        assertTrue(clients.tailsAsked.isEmpty(), "a first attempt without a resume range reads no tail");
        assertEquals(List.of("producer"), clients.released, "the producer is given back once, healthy");

        WrittenBatches.accept("writer-plain", new WriterCommitMessage[] {message});
        List<String> drained = new ArrayList<>(Arrays.asList(OffsetRuns.drain("writer-plain").split("\n")));
        drained.sort(null);
        assertEquals(List.of("a.t\t0\t10\t40\t3", "a.t\t1\t5\t7\t2"), drained, "what the driver's Python drains");
    }

    /** Keys and values in the Confluent wire format get the target registry's id; an id not in the map
     *  fails the task before the record is sent (ADR 0028). */
    @Test
    void schemaIdsAreRewrittenAndAnUnknownIdFailsBeforeTheRecordIsSent() throws IOException {
        MockProducer<byte[], byte[]> target = producer(true);
        Clients clients = new Clients(target);
        Map<String, String> options = options("writer-schemas");
        options.put("schemaIds", "1:7");
        options.put("schemaTopics", REMOTE + "\nother");
        WriteSettings settings = WriteSettings.from(SCHEMA, options);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        byte[] framed = {0, 0, 0, 0, 1, 6, 'a', 'b', 'c'};
        Object[] row = record(0, 10);
        row[1] = framed;
        write(writer, row, record(0, 11));
        assertArrayEquals(new byte[] {0, 0, 0, 0, 7, 6, 'a', 'b', 'c'}, target.history().get(0).value(),
            "the id is the target's, the payload unchanged");
        assertArrayEquals(bytes("v11"), target.history().get(1).value(), "a value not in the wire format is as it was");
        Object[] unknown = record(0, 12);
        unknown[1] = new byte[] {0, 0, 0, 0, 2, 6};
        IOException refused = assertThrows(IOException.class, () -> write(writer, unknown));
        assertTrue(refused.getMessage().contains("schema id 2 of a record of a.t[0] (source offset 12)"),
            refused.getMessage());
        assertEquals(2, target.history().size(), "the record with the unknown id is not sent");
        writer.abort();
        writer.close();

        options.put("schemaTopics", "other");  // a topic not in the list (raw bytes, MM2's heartbeats): as it is
        WriteSettings untouched = WriteSettings.from(SCHEMA, options);
        MockProducer<byte[], byte[]> second = producer(true);
        MirrorDataWriter plain = new MirrorDataWriter(untouched, untouched.resume, new Clients(second), false);
        write(plain, unknown);
        assertArrayEquals(new byte[] {0, 0, 0, 0, 2, 6}, second.history().get(0).value());
        plain.close();
    }

    @Test
    void aFailedSendFailsTheTaskAndRetiresTheProducer() throws IOException {
        MockProducer<byte[], byte[]> slow = producer(false);
        Clients clients = new Clients(slow);
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-failed"));
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(0, 11));
        assertTrue(slow.completeNext());
        assertTrue(slow.errorNext(new RecordTooLargeException("too large")));
        IOException next = assertThrows(IOException.class, () -> write(writer, record(0, 12)), "the next row stops the task");
        assertTrue(next.getMessage().contains("writing to the target failed") && next.getMessage().contains("too large"),
            next.getMessage());
        assertThrows(IOException.class, writer::commit, "nor does it commit");
        writer.abort();
        writer.close();
        assertEquals(2, slow.history().size(), "nothing sent after the failure");
        assertEquals(List.of("producer, failed"), clients.released, "a producer that failed a send is retired");
    }

    @Test
    void aResumedRunPairsWhatTheTargetHoldsAndSendsOnlyTheRest() throws IOException {
        Clients clients = new Clients();
        fill(clients.producer, 103);
        tail(clients, 0, 100, 103, record(0, 10), record(0, 11), record(0, 12));
        Map<String, String> options = options("writer-resumed");
        options.put("resume", REMOTE + "\t0\t100\t103");  // an interrupted run wrote target offsets 100..102
        WriteSettings settings = WriteSettings.from(SCHEMA, options);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(0, 11), record(0, 12), record(0, 13), record(0, 14));
        PartitionAcks part = report(writer.commit()).get("a.t-0");
        writer.close();

        assertEquals(List.of("a.t-0 k13 v13 " + (T0 + 13) + " [trace=id-13]", "a.t-0 k14 v14 " + (T0 + 14) + " [trace=id-14]"),
            sent(clients.producer), "the rows the target holds are not sent again");
        assertEquals(OffsetRunList.of(10, 100, 5), part.runs(), "held and sent rows pair as one run");
        assertEquals(3, part.resumed, "three rows found on the target");
        assertEquals(0, part.recopied, "nothing written twice");
        assertEquals(-1, part.resumeNext, "the range was passed: nothing left to compare");
        assertTrue(clients.tails.get(new TopicPartition(REMOTE, 0)).closed(), "the tail's consumer is closed");
    }

    @Test
    void aRowThatDiffersFromTheTailEndsTheComparisonAndCountsWhatIsWrittenAgain() throws IOException {
        Clients clients = new Clients();
        fill(clients.producer, 105);
        tail(clients, 0, 100, 105, record(0, 10), record(0, 11), record("t", 0, 12, "an older value"),
            record(0, 13), record(0, 14));
        Map<String, String> options = options("writer-differs");
        options.put("resume", REMOTE + "\t0\t100\t105");
        WriteSettings settings = WriteSettings.from(SCHEMA, options);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(0, 11), record(0, 12), record(0, 13), record(0, 14));
        PartitionAcks part = report(writer.commit()).get("a.t-0");
        writer.close();

        assertEquals(3, clients.producer.history().size(), "from the first row that differs, every row is sent");
        assertEquals(OffsetRunList.of(10, 100, 2, 12, 105, 3), part.runs());
        assertEquals(2, part.resumed);
        assertEquals(3, part.recopied, "target records 102..104 were not matched: their rows are written again");
    }

    @Test
    void aRealTimeBatchWhoseRowsAllMatchedSaysWhereTheNextOneCarriesOn() throws IOException {
        Clients clients = new Clients();
        tail(clients, 0, 100, 110, record(0, 10), record(0, 11), record(0, 12));
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-realtime"));
        Map<String, long[]> left = Map.of(WriteSettings.key(REMOTE, 0), new long[] {100, 110});
        MirrorDataWriter writer = new MirrorDataWriter(settings, left, clients, false);
        write(writer, record(0, 10), record(0, 11), record(0, 12));
        PartitionAcks part = report(writer.commit()).get("a.t-0");
        writer.close();
        assertTrue(clients.producer.history().isEmpty(), "every row was on the target");
        assertEquals(103, part.resumeNext, "the next batch compares from target offset 103");
        assertEquals(OffsetRunList.of(10, 100, 3), part.runs());
    }

    @Test
    void aRetriedAttemptComparesWhatAnEarlierAttemptWroteSinceTheBatchStarted() throws IOException {
        Map<String, String> options = options("writer-retried");
        options.put("retryFrom", REMOTE + "\t0\t100");  // a.t-0 ended at 100 when the batch started
        WriteSettings settings = WriteSettings.from(SCHEMA, options);

        Clients first = new Clients();
        fill(first.producer, 100);
        MirrorDataWriter attempt0 = new MirrorDataWriter(settings, settings.resume, first, false);
        write(attempt0, record(0, 10), record(0, 11), record(0, 12));
        assertTrue(first.tailsAsked.isEmpty(), "a first attempt compares nothing");
        assertEquals(3, first.producer.history().size());

        Clients retry = new Clients();
        fill(retry.producer, 102);
        tail(retry, 0, 100, 102, record(0, 10), record(0, 11));  // attempt 0 got two rows to the target
        MirrorDataWriter attempt1 = new MirrorDataWriter(settings, settings.resume, retry, true);
        write(attempt1, record(0, 10), record(0, 11), record(0, 12), record(0, 13));
        PartitionAcks part = report(attempt1.commit()).get("a.t-0");
        attempt1.close();
        assertEquals(List.of(new TopicPartition(REMOTE, 0)), retry.tailsAsked, "the retry reads the tail up to its end now");
        assertEquals(List.of("a.t-0 k12 v12 " + (T0 + 12) + " [trace=id-12]", "a.t-0 k13 v13 " + (T0 + 13) + " [trace=id-13]"),
            sent(retry.producer), "what the earlier attempt wrote is not sent again");
        assertEquals(OffsetRunList.of(10, 100, 4), part.runs());
        assertEquals(2, part.resumed);
    }

    @Test
    void aRealTimeAttemptRunAgainComparesFromWhereItsBatchBegan() throws IOException {
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-rt-retried"));  // no retryFrom option
        Clients retry = new Clients();
        fill(retry.producer, 102);
        tail(retry, 0, 100, 102, record(0, 10), record(0, 11));  // the lost attempt got two rows to the target
        MirrorDataWriter attempt1 = new MirrorDataWriter(settings, Map.of(), Map.of(WriteSettings.key(REMOTE, 0), 100L), retry, true, 4L);
        write(attempt1, record(0, 10), record(0, 11), record(0, 12));
        WriterCommitMessage message = attempt1.commit();
        assertTrue(((TaskReport) message).retried, "the driver's ledger learns a retried attempt wrote (ResumeLedger)");
        PartitionAcks part = report(message).get("a.t-0");
        attempt1.close();
        assertEquals(List.of("a.t-0 k12 v12 " + (T0 + 12) + " [trace=id-12]"), sent(retry.producer),
            "what the lost attempt wrote in this real-time batch is not sent again");
        assertEquals(2, part.resumed);
    }

    @Test
    void aFencedWriterRefusesAndSendsNothing() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-fenced"));
        Fences.renew("writer-fenced", System.currentTimeMillis() - 1_000);  // another instance holds the flow now
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        IOException refused = assertThrows(Fences.FencedException.class, () -> write(writer, record(0, 10)));
        assertTrue(refused.getMessage().contains("flow writer-fenced: fenced"), refused.getMessage());
        writer.abort();
        writer.close();
        assertTrue(clients.producer.history().isEmpty(), "nothing sent");
        Fences.forget("writer-fenced");
    }

    @Test
    void anAcknowledgementAfterTheDeadlineIsListedAsLate() throws IOException {
        MockProducer<byte[], byte[]> manual = producer(false);
        Clients clients = new Clients(manual);
        fill(manual, 40);
        WriteSettings settings = WriteSettings.from(SCHEMA, options("writer-late"));
        Fences.renew("writer-late", System.currentTimeMillis() + 60_000);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(0, 11));
        assertTrue(manual.completeNext(), "acknowledged in time: target offset 40");
        Fences.renew("writer-late", System.currentTimeMillis() - 1);  // the JVM paused past its deadline
        PartitionAcks part = report(writer.commit()).get("a.t-0");  // flush: 41 is acknowledged now
        writer.close();
        assertEquals(OffsetRunList.of(10, 40, 2), part.runs(), "a late record is on the target: still paired");
        assertEquals(40, part.lastValid());
        String late = Fences.lateWrites("writer-late", 1_000);
        assertTrue(late.contains("{\"topic\":\"a.t\",\"partition\":0,\"from\":41,\"dropped\":0,\"upstream\":12,"
            + "\"offsets\":[41]}"),
            "the late record is listed for the driver, with the source offset a writer must copy past: " + late);
        Fences.forget("writer-late");
    }

    /** Exactly-once settings, source topic t's ids S1 and remote a.t's R1. */
    private static WriteSettings exactlyOnce(String flow) {
        return WriteSettings.from(SCHEMA, exactlyOnceOptions(flow));
    }

    /** The same in real-time mode, a transaction at most {@code transactionMs} old. */
    private static WriteSettings realTimeExactlyOnce(String flow, long transactionMs) {
        Map<String, String> options = exactlyOnceOptions(flow);
        options.put("transactionMs", Long.toString(transactionMs));
        return WriteSettings.from(SCHEMA, options);
    }

    private static Map<String, String> exactlyOnceOptions(String flow) {
        Map<String, String> options = options(flow);
        options.put("exactlyOnce", "true");
        options.put("transactionalIdPrefix", "p-");
        options.put("progressGroup", "mirrorspark-progress");
        options.put("topicIds", "t\tS1\tR1");
        return options;
    }

    /** The task's transactional producer, a.t-0 holding {@code held0} records and a.t-1 {@code held1}. */
    private static MockProducer<byte[], byte[]> transactional(Clients clients, WriteSettings settings, long held0,
                                                              long held1) {
        MockProducer<byte[], byte[]> producer = producer(true);
        fill(producer, held0, held1);
        producer.initTransactions();
        clients.transactional = new Transactions.Entry("p-0", producer, new HashMap<>(settings.producer));
        return producer;
    }

    @Test
    void exactlyOnceCommitsTheTasksRowsWithEachPartitionsProgressInOneTransaction() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = exactlyOnce("writer-eos");
        MockProducer<byte[], byte[]> task = transactional(clients, settings, 40, 7);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(0, 11), record(1, 3), record(0, 12));
        assertTrue(task.transactionInFlight(), "rows are sent in the task's transaction");
        assertTrue(task.history().isEmpty(), "nothing visible before the commit");
        Map<String, PartitionAcks> parts = report(writer.commit());
        writer.close();

        assertEquals(List.of("a.t-0 k10 v10 " + (T0 + 10) + " [trace=id-10]", "a.t-0 k11 v11 " + (T0 + 11) + " [trace=id-11]",
            "a.t-1 k3 v3 " + (T0 + 3) + " [trace=id-3]", "a.t-0 k12 v12 " + (T0 + 12) + " [trace=id-12]"), sent(task),
            "committed with the transaction, both partitions in it");
        assertTrue(task.transactionCommitted());
        assertEquals(1, task.consumerGroupOffsetsHistory().size(), "one commit for the task");
        Map<TopicPartition, OffsetAndMetadata> committed = task.consumerGroupOffsetsHistory().get(0)
            .get("mirrorspark-progress");
        assertEquals(13, committed.get(new TopicPartition(REMOTE, 0)).offset(), "the next source offset");
        assertEquals("ms2;S1|R1;10:40:3", committed.get(new TopicPartition(REMOTE, 0)).metadata(),
            "the pairs, committed with the records, for these topics");
        assertEquals(4, committed.get(new TopicPartition(REMOTE, 1)).offset());
        assertEquals("ms2;S1|R1;3:7:1", committed.get(new TopicPartition(REMOTE, 1)).metadata());
        assertEquals(OffsetRunList.of(10, 40, 3), parts.get("a.t-0").runs());
        assertEquals(OffsetRunList.of(3, 7, 1), parts.get("a.t-1").runs());
        assertEquals(42, clients.progress.get(new TopicPartition(REMOTE, 0)).downstream(12),
            "the JVM knows the committed progress for the next batch");
        assertEquals(List.of(REMOTE + "-0", REMOTE + "-1"), clients.progressAsked, "each partition asked once, kept allowed");
        assertEquals(List.of("p-0"), clients.released, "given back, kept for the next batch; nothing forgotten");
    }

    @Test
    void anExactlyOnceReRunSkipsWhatIsCommittedAndSendsTheRest() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = exactlyOnce("writer-eos-rerun");
        // A crash after the transaction holding source offsets 10 and 11 (at 40, 41) committed.
        MockProducer<byte[], byte[]> task = transactional(clients, settings, 42, 0);
        clients.progress.put(new TopicPartition(REMOTE, 0), Progress.decode(12, "ms2;S1|R1;10:40:2"));
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, true);
        write(writer, record(0, 10), record(0, 11), record(0, 12), record(0, 13));
        PartitionAcks part = report(writer.commit()).get("a.t-0");
        writer.close();

        assertEquals(List.of("a.t-0 k12 v12 " + (T0 + 12) + " [trace=id-12]", "a.t-0 k13 v13 " + (T0 + 13) + " [trace=id-13]"),
            sent(task), "committed rows are not sent again");
        assertEquals(OffsetRunList.of(10, 40, 4), part.runs(), "committed rows paired from the progress");
        assertEquals(2, part.resumed);
        assertEquals(List.of(REMOTE + "-0, fresh"), clients.progressAsked, "a retried attempt reads the target");
        OffsetAndMetadata progress = task.consumerGroupOffsetsHistory().get(0).get("mirrorspark-progress")
            .get(new TopicPartition(REMOTE, 0));
        assertEquals(14, progress.offset());
        assertEquals("ms2;S1|R1;10:40:4", progress.metadata());
    }

    @Test
    void aFailedExactlyOnceTaskAbortsAndForgetsWhatItKnewOfItsPartitions() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = exactlyOnce("writer-eos-failed");
        MockProducer<byte[], byte[]> task = transactional(clients, settings, 0, 0);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10), record(1, 20));
        writer.abort();  // e.g. the query stopped mid-batch
        writer.close();
        assertTrue(task.transactionAborted(), "nothing of it visible");
        assertEquals(List.of("forgot a.t-0", "forgot a.t-1", "p-0"), clients.released,
            "the next batch reads both partitions' progress from the target; the producer, its transaction aborted, is kept");
    }

    @Test
    void aRealTimeTaskCommitsItsTransactionOnceItIsOldWhetherRowsComeOrNot() throws IOException, InterruptedException {
        Clients clients = new Clients();
        WriteSettings settings = realTimeExactlyOnce("writer-eos-realtime", 40);
        MockProducer<byte[], byte[]> task = transactional(clients, settings, 40, 0);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false, 3L);
        write(writer, record(0, 10), record(0, 11));
        long deadline = System.currentTimeMillis() + 5_000L;
        while (task.history().isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(10L);  // no more rows: the ticker commits what the task holds
        }
        assertEquals(2, task.history().size(), "visible without another row and before the batch's end");
        OffsetAndMetadata first = task.consumerGroupOffsetsHistory().get(0).get("mirrorspark-progress")
            .get(new TopicPartition(REMOTE, 0));
        assertEquals(12, first.offset(), "its progress committed with them");
        write(writer, record(0, 12));
        assertTrue(task.transactionInFlight(), "the next row begins the next transaction");
        PartitionAcks part = report(writer.commit()).get("a.t-0");
        writer.close();
        assertEquals(3, task.history().size(), "the batch's end commits the rest");
        assertEquals(13, task.consumerGroupOffsetsHistory().get(task.consumerGroupOffsetsHistory().size() - 1)
            .get("mirrorspark-progress").get(new TopicPartition(REMOTE, 0)).offset());
        assertEquals(OffsetRunList.of(10, 40, 3), part.runs());
        assertEquals(13, clients.progress.get(new TopicPartition(REMOTE, 0)).next, "kept for the next real-time batch");
    }

    @Test
    void aRealTimeTaskCommitsWhenItsSourceHasPolledEverythingItHad() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = realTimeExactlyOnce("writer-eos-boundary", 600_000);  // the ticker's bound out of the way
        MockProducer<byte[], byte[]> task = transactional(clients, settings, 40, 0);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false, 0L);
        assertTrue(PollBoundary.wanted(), "the task's thread tells its source it waits for poll boundaries");
        write(writer, record(0, 10), record(0, 11));
        assertTrue(task.history().isEmpty(), "held while the poll's records come");
        PollBoundary.reached();  // the source polled everything it had and is about to wait
        assertEquals(2, task.history().size(), "committed before the source waits: MM2's poll boundary");
        PollBoundary.reached();
        assertEquals(1, task.consumerGroupOffsetsHistory().size(), "nothing held: no empty transaction");
        write(writer, record(0, 12));
        writer.commit();
        writer.close();
        assertEquals(3, task.history().size());
        assertFalse(PollBoundary.wanted(), "a finished task leaves its thread's source alone");
    }

    @Test
    void aFencedExactlyOnceWriterBeginsNoTransaction() throws IOException {
        Clients clients = new Clients();
        WriteSettings settings = exactlyOnce("writer-eos-fenced");
        MockProducer<byte[], byte[]> p0 = transactional(clients, settings, 0, 0);
        clients.progress.put(new TopicPartition(REMOTE, 0), Progress.decode(11, "ms2;S1|R1;10:0:1"));
        Fences.renew("writer-eos-fenced", System.currentTimeMillis() - 1_000);
        MirrorDataWriter writer = new MirrorDataWriter(settings, settings.resume, clients, false);
        write(writer, record(0, 10));  // committed already: not sent, so not refused
        assertThrows(Fences.FencedException.class, () -> write(writer, record(0, 11)));
        writer.abort();
        writer.close();
        assertFalse(p0.transactionInFlight(), "no transaction begun");
        assertTrue(p0.history().isEmpty() && p0.uncommittedRecords().isEmpty(), "nothing sent");
        assertEquals(List.of("p-0"), clients.released, "kept: no transaction begun");
        Fences.forget("writer-eos-fenced");
    }
}
