package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;

import io.mirrorspark.kafka.OffsetRunList;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once progress of a re-created topic, without Kafka (issue 42, finding 2): the progress is
 * committed with the source and remote topics' ids the driver passes (option {@code topicIds}), and
 * progress committed for other ids, read back or kept in a pooled producer, skips nothing of the new
 * topic; progress of an earlier version (no ids) is still read and used. Its pairs are kept as distances
 * from the run before, so a transactional source's many short runs fit.
 */
final class TopicGenerationsTest {
    private static final OffsetRunList RUNS = OffsetRunList.of(100, 5_000, 50, 152, 5_051, 10);

    private static Map<String, String> options(String topicIds) {
        Map<String, String> options = new HashMap<>();
        options.put("flow", "a->b");
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("remoteTopics", "orders\ta.orders\npayments\ta.payments");
        if (topicIds != null) {
            options.put("topicIds", topicIds);
        }
        return options;
    }

    private static StructType schema() {
        return new StructType()
            .add("key", DataTypes.BinaryType).add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType).add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType).add("timestamp", DataTypes.LongType)
            .add("headers", DataTypes.createArrayType(new StructType()
                .add("key", DataTypes.StringType).add("value", DataTypes.BinaryType)));
    }

    /** The driver's ids, per remote topic. */
    @Test
    void theDriversIdsAreKeptPerRemoteTopic() {
        WriteSettings s = WriteSettings.from(schema(), options("orders\tS1-_x\tR1\npayments\t\t\nother\tS9\tR9"));
        assertEquals("S1-_x|R1", s.topicsOf("a.orders"), "ids of a renamed topic");
        assertEquals("|", s.topicsOf("a.payments"), "ids not known yet are empty");
        assertNull(s.topicsOf("other"), "a topic the plan does not copy");
        assertNull(s.topicsOf("a.other"), "a topic the plan does not copy");
        assertNull(WriteSettings.from(schema(), options(null)).topicsOf("a.orders"), "no option: not told");
        WriteSettings librdkafka = WriteSettings.from(schema(), options("orders\t+/////////9+/////////w\t/////////////////////w"));
        assertEquals("+/////////9+/////////w|/////////////////////w", librdkafka.topicsOf("a.orders"),
            "ids in librdkafka's standard base64 ('+' and '/')");
        assertTrue(Progress.decode(1, Progress.encode(librdkafka.topicsOf("a.orders"), new OffsetRunList()))
            .heldFor(librdkafka.topicsOf("a.orders")), "such ids round trip and compare");
        assertFalse(Progress.decode(1, Progress.encode(librdkafka.topicsOf("a.orders"), new OffsetRunList()))
            .heldFor("+/////////9+/////////w|AAAAAAdbzRUAAAAAOt5osQ"), "such ids round trip and compare");
        for (String bad : new String[] {"orders\tS1", "orders\tS|1\tR1", "\tS1\tR1", "orders\tS1\tR1\tx"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WriteSettings.from(schema(), options(bad)), "refused: " + bad);
            assertTrue(e.getMessage() != null && e.getMessage().contains("'topicIds' option has a bad line"),
                "refused: " + bad);
        }
    }

    /** Committed with the ids, read back with them. */
    @Test
    void progressIsUsedOnlyForTheTopicsItWasCommittedFor() {
        Progress committed = Progress.decode(162, Progress.encode("S1|R1", RUNS));
        assertEquals("S1|R1", committed.topics, "ids round trip: " + committed);
        assertFalse(committed.partial, "pairs round trip: " + committed);
        assertEquals(5_049, committed.downstream(149), "pairs round trip");
        assertEquals(5_060, committed.downstream(161), "pairs round trip");
        assertEquals(-1, committed.downstream(150), "pairs round trip");
        assertTrue(committed.heldFor("S1|R1"), "the same topics: used");
        assertTrue(committed.heldFor("S1|"), "ids not known for the batch: used");
        assertTrue(committed.heldFor("|R1"), "ids not known for the batch: used");
        assertTrue(committed.heldFor(null), "ids not known for the batch: used");
        assertFalse(committed.heldFor("S2|R1"), "the source topic re-created: not used");
        assertFalse(committed.heldFor("S1|R2"), "the remote topic re-created: not used");
        assertTrue(Progress.decode(162, Progress.encode("|R1", RUNS)).heldFor("S2|R1"), "committed without the source id");
    }

    /** Progress committed under librdkafka's clients (0.1.0's) names its ids in base64's standard alphabet. */
    @Test
    void theSameIdInEitherAlphabetIsTheSameTopic() {
        Progress committed = Progress.decode(162, Progress.encode("m0Xq8uhOQSC7G4PJtl+wdw|/7Xq8uhOQSC7G4PJtl+wdw", RUNS));
        assertTrue(committed.heldFor("m0Xq8uhOQSC7G4PJtl-wdw|_7Xq8uhOQSC7G4PJtl-wdw"), "Kafka's text of the same ids");
        assertFalse(committed.heldFor("m0Xq8uhOQSC7G4PJtl-wdx|_7Xq8uhOQSC7G4PJtl-wdw"), "another source topic");
    }

    /** A batch of the re-created source topic: nothing of it is committed, every row is sent. */
    @Test
    void aReCreatedSourceTopicSkipsNothing() {
        Progress committed = Progress.decode(162, Progress.encode("S1|R1", RUNS));
        Progress forNew = Progress.forTopics(committed, "S2|R1");
        assertSame(Progress.NONE, forNew, "an older topic's progress gives way to none");
        assertSame(committed, Progress.forTopics(committed, "S1|R1"), "the same topic's progress is kept");
        TaskTransactions.Part txn = new TaskTransactions.Part(new PartitionAcks("a.orders", 0), forNew, "S2|R1");
        assertFalse(TaskTransactions.committed(txn, 0), "rows below the old next are sent");
        assertFalse(TaskTransactions.committed(txn, 120), "rows below the old next are sent");
    }

    /** Metadata of the earlier version: read, no ids, used for any topics. */
    @Test
    void anEarlierVersionsProgressIsStillReadAndUsed() {
        Progress v1 = Progress.decode(162, "ms1;100:5000:50,152:5051:10");
        String what = "an earlier version's progress is still read and used";
        assertNull(v1.topics, what);
        assertTrue(v1.heldFor("S2|R2"), what);
        assertEquals(5_059, v1.downstream(160), what);
        assertFalse(v1.partial, what);
        assertTrue(Progress.decode(10, "ms1p;5:105:5").partial, "an earlier version's partial flag");
        assertEquals(-1, Progress.decode(10, "ms2;S1|R1;1:x:3").downstream(1), "damaged pairs give none");
        assertEquals(-1, Progress.decode(10, "ms2;S1|R1").downstream(1), "damaged metadata gives no pair");
        assertTrue(Progress.decode(10, "ms2;S1|R1").committed(5), "damaged metadata still says what is committed");
        assertEquals(104, Progress.decode(10, Progress.encode("S1|R1", OffsetRunList.of(0, 100, 5, 5, -1, 0))).downstream(4),
            "a break is not committed as a pair");
    }

    /** A transactional source: a marker after every 3 records, 2,000 short runs in one transaction. */
    @Test
    void manyShortRunsOfATransactionalSourceFit() {
        OffsetRunList marked = new OffsetRunList();
        for (int i = 0; i < 2_000; i++) {
            marked.add(1_000_000L + 4L * i, 7_000_000L + 3L * i, 3);
        }
        String meta = Progress.encode("S1|R1", marked);
        Progress q = Progress.decode(1_008_000, meta);
        assertTrue(meta.length() <= Progress.MAX_METADATA, "too many runs fit: " + meta.length());
        assertTrue(q.partial, "too many runs say so");
        assertEquals(7_000_000L + 3L * 1_999 + 2, q.downstream(1_000_000L + 4L * 1_999 + 2), "the newest pair is kept");
        assertEquals(7_000_000L + 3L * 1_600, q.downstream(1_000_000L + 4L * 1_600), "400 short runs kept, not 180");
        assertEquals(-1, q.downstream(1_000_000L), "the oldest are dropped");
    }
}
