package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.mirrorspark.kafka.PollBoundary;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead.RecordStatus;
import org.junit.jupiter.api.Test;

/** The grouped source under Spark's real-time trigger, on mock consumers: no broker, no Spark. */
final class RealTimeGroupsTest {
    private static final TopicPartition T0 = new TopicPartition("t", 0);
    private static final TopicPartition T1 = new TopicPartition("t", 1);
    private static final TopicPartition T2 = new TopicPartition("t", 2);
    private static final TopicPartition GONE = new TopicPartition("gone", 0);

    private static Map<String, String> options(String assign) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "t|gone");
        options.put("groups", "2");
        options.put("idleCheckMs", "0");
        options.put("flow", "rt-flow");
        if (assign != null) {
            options.put("assign", assign);
        }
        return options;
    }

    private static GroupedMicroBatchStream stream(Map<String, String> options, MockConsumer<byte[], byte[]> driver) {
        return new GroupedMicroBatchStream(new SourceSettings(options), "unused-checkpoint", driver);
    }

    private static MockConsumer<byte[], byte[]> driver() {
        MockConsumer<byte[], byte[]> driver = new MockConsumer<>(OffsetResetStrategy.NONE);
        driver.updateBeginningOffsets(Map.of(T0, 0L, T1, 0L, T2, 2L));
        return driver;
    }

    @Test
    void assignIsParsedSortedAndBadAssignNamesTheOption() {
        assertEquals(List.of(T0, T1, T2, new TopicPartition("u", 0)),
            SourceSettings.parseAssign("{\"u\":[0],\"t\":[2,0,1]}"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
            () -> new SourceSettings(options("{\"t\":\"0\"}")));
        assertTrue(bad.getMessage().startsWith("assign:"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new SourceSettings(options("{\"t\":[-1]}")));
    }

    @Test
    void realTimeModeNeedsAssignAndNoRecordBound() {
        IllegalArgumentException noAssign = assertThrows(IllegalArgumentException.class,
            () -> stream(options(null), driver()).prepareForRealTimeMode());
        assertTrue(noAssign.getMessage().contains("assign"), noAssign.getMessage());
        Map<String, String> bounded = options("{\"t\":[0]}");
        bounded.put("maxOffsetsPerTrigger", "100");
        IllegalArgumentException bound = assertThrows(IllegalArgumentException.class,
            () -> stream(bounded, driver()).prepareForRealTimeMode());
        assertTrue(bound.getMessage().contains("maxOffsetsPerTrigger"), bound.getMessage());
    }

    /**
     * Three partitions in two tasks with no end; a new partition from its earliest offset; one no
     * longer planned left out; the merged end moves each partition on from the batch's start; one
     * given up stays where it stopped and is handed to the driver.
     */
    @Test
    void aBatchPlansOpenGroupsAndMergesWhereEachStopped() {
        GroupedMicroBatchStream stream = stream(options("{\"t\":[0,1,2]}"), driver());
        stream.prepareForRealTimeMode();
        PartitionOffsets start = new PartitionOffsets(Map.of(T0, 5L, T1, 7L, GONE, 3L));
        assertEquals(start, stream.latestOffset(start, null), "latestOffset never waits in real-time mode");
        InputPartition[] tasks = stream.planInputPartitions(start);
        assertEquals(2, tasks.length, "two groups");
        List<String> planned = new ArrayList<>();
        for (InputPartition task : tasks) {
            GroupPartition group = (GroupPartition) task;
            assertTrue(group.realTime, "a real-time group");
            for (OffsetRange r : group.ranges) {
                planned.add(r.topic + "-" + r.partition + ":" + r.from + ".." + (r.until == Long.MAX_VALUE ? "" : r.until));
            }
        }
        planned.sort(null);
        assertEquals(List.of("t-0:5..", "t-1:7..", "t-2:2.."), planned, "new t-2 at its earliest, gone-0 not planned");

        PartitionOffset first = new GroupOffset(Map.of(T0, 9L, T2, 2L), Set.of());
        PartitionOffset second = new GroupOffset(Map.of(T1, 8L), Set.of());
        assertEquals(new PartitionOffsets(Map.of(T0, 9L, T1, 8L, T2, 2L)),
            stream.mergeOffsets(new PartitionOffset[] {first, second}));

        RealTimeDrops.take("rt-flow");
        PartitionOffset recreated = new GroupOffset(Map.of(T0, 6L, T1, 7L), Set.of(T0));
        assertEquals(new PartitionOffsets(Map.of(T0, 6L, T1, 7L, T2, 2L)),
            stream.mergeOffsets(new PartitionOffset[] {new GroupOffset(Map.of(T2, 2L), Set.of()), recreated}),
            "a partition given up stays where it stopped: nothing of a new topic is read as the old one's");
        assertEquals("t\t0\t6\n", RealTimeDrops.take("rt-flow"), "the driver is told, once");
        assertEquals("", RealTimeDrops.take("rt-flow"));

        IllegalStateException missing = assertThrows(IllegalStateException.class,
            () -> stream.mergeOffsets(new PartitionOffset[] {first}));
        assertTrue(missing.getMessage().contains("2 task(s) reported 1"), missing.getMessage());
        assertThrows(IllegalStateException.class, () -> stream.mergeOffsets(
            new PartitionOffset[] {new GroupOffset(Map.of(T0, 4L), Set.of()), second}), "backwards is refused");
    }

    private static MockConsumer<byte[], byte[]> source(long t0Records) {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
        consumer.updateBeginningOffsets(Map.of(T0, 0L, T1, 0L));
        consumer.updateEndOffsets(Map.of(T0, t0Records, T1, 3L));
        consumer.updatePartitions("t", List.of(new PartitionInfo("t", 0, null, null, null),
            new PartitionInfo("t", 1, null, null, null)));
        return consumer;
    }

    private static List<OffsetRange> open(long t0From, long t1From) {
        return List.of(new OffsetRange("t", 0, t0From, Long.MAX_VALUE), new OffsetRange("t", 1, t1From, Long.MAX_VALUE));
    }

    /** Records until the deadline, then "no record" once; the offset is the first record not handed over. */
    @Test
    void aTaskReadsUntilItsDeadlineAndReportsWhereItStopped() throws Exception {
        MockConsumer<byte[], byte[]> consumer = source(5L);
        GroupReader reader = new GroupReader(new SourceSettings(options("{\"t\":[0,1]}")), open(0L, 3L), consumer, true);
        for (long offset = 0; offset < 5; offset++) {
            consumer.addRecord(new ConsumerRecord<>("t", 0, offset, new byte[0], new byte[] {(byte) offset}));
        }
        long start = System.currentTimeMillis();
        List<Long> read = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            RecordStatus status = reader.nextWithTimeout(start, 5_000L);
            assertTrue(status.hasRecord());
            read.add(reader.get().getLong(4));
        }
        assertEquals(List.of(0L, 1L), read);
        GroupOffset partly = (GroupOffset) reader.getOffset();
        assertEquals(Map.of(T0, 2L, T1, 3L), partly.next, "the first record not handed over, and t-1's position");
        while (reader.nextWithTimeout(start, 400L).hasRecord()) {
            read.add(reader.get().getLong(4));
        }
        assertTrue(System.currentTimeMillis() - start >= 400L, "no record is answered only at the deadline");
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L), read);
        assertEquals(Map.of(T0, 5L, T1, 3L), ((GroupOffset) reader.getOffset()).next);
        reader.close();
    }

    /**
     * Quiet partitions are waited on longer: once a check finds every partition at its end the task
     * polls for {@link GroupReader#CAUGHT_UP_WAIT_MS}, not the check's 2 s; a record puts it back on
     * the check's wait (and the stall check) until the next check finds it caught up again.
     */
    @Test
    void aCaughtUpTaskWaitsLongerBetweenPolls() throws Exception {
        List<Long> waits = new ArrayList<>();
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE) {
            @Override
            public synchronized org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> poll(
                    java.time.Duration timeout) {
                waits.add(timeout.toMillis());
                try {
                    Thread.sleep(Math.min(timeout.toMillis(), 250L));  // no record: the wait passes
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.poll(java.time.Duration.ZERO);
            }
        };
        consumer.updateBeginningOffsets(Map.of(T0, 0L, T1, 0L));
        consumer.updateEndOffsets(Map.of(T0, 1L, T1, 3L));
        GroupReader reader = new GroupReader(new SourceSettings(options("{\"t\":[0,1]}")), open(0L, 3L), consumer, true);
        consumer.addRecord(new ConsumerRecord<>("t", 0, 0L, new byte[0], new byte[] {0}));
        long start = System.currentTimeMillis();
        assertTrue(reader.nextWithTimeout(start, 6_000L).hasRecord(), "the record first");
        assertFalse(reader.nextWithTimeout(start, 6_000L).hasRecord(), "then nothing until the deadline");
        assertTrue(waits.stream().anyMatch(w -> w > 2_000L), "caught up: a wait over the check's 2 s, " + waits);
        assertTrue(waits.stream().allMatch(w -> w <= GroupReader.CAUGHT_UP_WAIT_MS), "never past it: " + waits);
        int before = waits.indexOf(waits.stream().filter(w -> w > 2_000L).findFirst().orElseThrow());
        assertTrue(before >= 2, "the check's waits until a check found the partitions caught up: " + waits);
        reader.close();
    }

    /**
     * Exactly-once: while the last fetch showed more records on their way (t-0 ends at 3, one fetched)
     * a drained fetch is no poll boundary, so a backlog's transaction grows until the sink commits it
     * by age; once the fetches show every partition at its end the boundary comes at once.
     */
    @Test
    void aPollBoundaryWaitsForTheFetchesToReachTheEnd() throws Exception {
        MockConsumer<byte[], byte[]> consumer = source(3L);
        GroupReader reader = new GroupReader(new SourceSettings(options("{\"t\":[0,1]}")), open(0L, 3L), consumer, true);
        int[] boundaries = {0};
        PollBoundary.register(() -> boundaries[0]++);
        try {
            consumer.addRecord(new ConsumerRecord<>("t", 0, 0L, new byte[0], new byte[] {0}));
            long start = System.currentTimeMillis();
            assertTrue(reader.nextWithTimeout(start, 300L).hasRecord());
            assertFalse(reader.nextWithTimeout(start, 300L).hasRecord(), "records 1 and 2 never came");
            assertEquals(0, boundaries[0], "more on its way: no boundary, the transaction stays open");
            consumer.addRecord(new ConsumerRecord<>("t", 0, 1L, new byte[0], new byte[] {1}));
            consumer.addRecord(new ConsumerRecord<>("t", 0, 2L, new byte[0], new byte[] {2}));
            long again = System.currentTimeMillis();
            assertTrue(reader.nextWithTimeout(again, 300L).hasRecord());
            assertTrue(reader.nextWithTimeout(again, 300L).hasRecord());
            assertEquals(0, boundaries[0], "records still handed over");
            assertFalse(reader.nextWithTimeout(again, 300L).hasRecord());
            assertTrue(boundaries[0] >= 1, "at the end: the boundary, so the sink commits before the wait");
        } finally {
            PollBoundary.clear();
            reader.close();
        }
    }

    /** A flow being stopped: its readers hand over what they fetched already and end the batch then, not at its deadline. */
    @Test
    void aStoppingFlowsReaderEndsItsBatchAtOnce() throws Exception {
        Map<String, String> options = options("{\"t\":[0,1]}");
        options.put("flow", "rt-stopping");
        MockConsumer<byte[], byte[]> consumer = source(3L);
        GroupReader reader = new GroupReader(new SourceSettings(options), open(0L, 3L), consumer, true);
        for (long offset = 0; offset < 3; offset++) {
            consumer.addRecord(new ConsumerRecord<>("t", 0, offset, new byte[0], new byte[] {(byte) offset}));
        }
        long start = System.currentTimeMillis();
        assertTrue(reader.nextWithTimeout(start, 60_000L).hasRecord());
        BatchEnds.request("rt-stopping");
        try {
            int more = 0;
            while (reader.nextWithTimeout(start, 60_000L).hasRecord()) {
                more++;
            }
            assertTrue(System.currentTimeMillis() - start < 10_000L, "ended, not at the deadline");
            assertTrue(more <= 2, "no poll after the request: at most what was fetched");
            assertEquals(1L + more, ((GroupOffset) reader.getOffset()).next.get(T0), "where the batch ended");
        } finally {
            BatchEnds.clear("rt-stopping");
            reader.close();
        }
        GroupReader next = new GroupReader(new SourceSettings(options), open(1L, 3L), source(3L), true);
        assertFalse(next.nextWithTimeout(System.currentTimeMillis(), 300L).hasRecord(), "cleared: to the deadline");
        next.close();
    }

    /**
     * Spark ends a task whose last call answered a record once its own clock passes the deadline,
     * asking where it stopped without another call: a normal end, so the consumer goes back to the
     * pool for the next batch; a task that failed closes its consumer.
     */
    @Test
    void aTaskEndedBySparksClockGivesItsConsumerBack() throws Exception {
        Map<String, String> options = options("{\"t\":[0,1]}");
        options.put("kafka.client.id", "ended-by-clock-" + System.nanoTime());  // a pool key of its own
        SourceSettings settings = new SourceSettings(options);
        MockConsumer<byte[], byte[]> consumer = source(5L);
        GroupReader reader = new GroupReader(settings, open(0L, 3L), consumer, true);
        consumer.addRecord(new ConsumerRecord<>("t", 0, 0L, new byte[0], new byte[] {0}));
        assertTrue(reader.nextWithTimeout(System.currentTimeMillis(), 5_000L).hasRecord());
        assertEquals(Map.of(T0, 1L, T1, 3L), ((GroupOffset) reader.getOffset()).next);
        reader.close();
        assertFalse(consumer.closed(), "a normal end keeps the consumer");
        assertSame(consumer, ConsumerPool.acquire(settings.consumer, true, Set.of(T0, T1)), "pooled for the next batch");

        Map<String, String> stalling = new HashMap<>(options);
        stalling.put("pollTimeoutMs", "1");
        MockConsumer<byte[], byte[]> behind = source(9L);  // t-0's records 4..8 are due and never come
        GroupReader stalled = new GroupReader(new SourceSettings(stalling), open(4L, 3L), behind, true);
        assertThrows(GroupReader.SourceStalledException.class,
            () -> stalled.nextWithTimeout(System.currentTimeMillis(), 5_000L));
        stalled.close();
        assertTrue(behind.closed(), "a failed task's consumer is closed, not pooled");
    }

    /**
     * Caught up is idle, even past pollTimeoutMs; a partition whose end went behind the position
     * (re-created) is given up and reported; records due that never come fail the task.
     */
    @Test
    void idleIsNotStalledAndAShrunkenPartitionIsReported() throws Exception {
        Map<String, String> options = options("{\"t\":[0,1]}");
        options.put("pollTimeoutMs", "1");
        MockConsumer<byte[], byte[]> consumer = source(1L);  // t-0 ends at 1, behind offset 4 read already
        GroupReader reader = new GroupReader(new SourceSettings(options), open(4L, 3L), consumer, true);
        long start = System.currentTimeMillis();
        assertFalse(reader.nextWithTimeout(start, 2_600L).hasRecord(), "nothing to read");
        GroupOffset offset = (GroupOffset) reader.getOffset();
        assertEquals(Set.of(T0), offset.dropped, "t-0 given up");
        assertEquals(Map.of(T0, 4L, T1, 3L), offset.next, "t-0 kept where it stopped, t-1 idle at its end, not stalled");
        reader.close();

        MockConsumer<byte[], byte[]> outOfRange = source(1L);  // the fetch at 4 answered "out of range"
        outOfRange.setPollException(new OffsetOutOfRangeException("out of range", Map.of(T0, 4L)));
        GroupReader past = new GroupReader(new SourceSettings(options), open(4L, 3L), outOfRange, true);
        assertFalse(past.nextWithTimeout(System.currentTimeMillis(), 300L).hasRecord());
        GroupOffset waiting = (GroupOffset) past.getOffset();
        assertEquals(Set.of(T0), waiting.dropped, "past its end with its start below: went back, given up");
        assertEquals(4L, waiting.next.get(T0), "where it stopped, not its earliest offset");
        past.close();

        MockConsumer<byte[], byte[]> behind = source(9L);  // t-0's records 4..8 are due and never come
        GroupReader stalled = new GroupReader(new SourceSettings(options), open(4L, 3L), behind, true);
        GroupReader.SourceStalledException e = assertThrows(GroupReader.SourceStalledException.class,
            () -> stalled.nextWithTimeout(System.currentTimeMillis(), 5_000L));
        assertTrue(e.getMessage().contains("t-0 at 4"), e.getMessage());
    }
    /** A real-time task asks the brokers for the ends only of partitions its fetches did not show caught up. */
    @Test
    void caughtUpPartitionsCostNoEndOffsetRequest() throws Exception {
        List<java.util.Collection<TopicPartition>> asked = new ArrayList<>();
        Map<String, String> options = options("{\"t\":[0,1]}");
        GroupReader reader = new GroupReader(new SourceSettings(options), open(4L, 3L), counting(asked, 4L), true);
        assertFalse(reader.nextWithTimeout(System.currentTimeMillis(), 2_300L).hasRecord());
        assertTrue(asked.isEmpty(), "nothing asked while every partition is caught up: " + asked);
        reader.close();

        // t-0 has 2 records the fetches have not brought
        GroupReader behind = new GroupReader(new SourceSettings(options), open(4L, 3L), counting(asked, 6L), true);
        assertFalse(behind.nextWithTimeout(System.currentTimeMillis(), 2_300L).hasRecord());
        assertEquals(List.of(List.of(T0)), asked, "only t-0's end is asked");
        behind.close();
    }

    /** t-0 ending at {@code t0End}, t-1 at 3; each endOffsets call's partitions go to {@code asked}. */
    private static MockConsumer<byte[], byte[]> counting(List<java.util.Collection<TopicPartition>> asked, long t0End) {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE) {
            @Override
            public synchronized Map<TopicPartition, Long> endOffsets(java.util.Collection<TopicPartition> partitions,
                    java.time.Duration timeout) {
                asked.add(List.copyOf(partitions));
                return super.endOffsets(partitions, timeout);
            }
        };
        consumer.updateBeginningOffsets(Map.of(T0, 0L, T1, 0L));
        consumer.updateEndOffsets(Map.of(T0, t0End, T1, 3L));
        return consumer;
    }
}
