package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import java.util.HashMap;
import java.util.Map;

import io.mirrorspark.UnitChecks;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Exactly-once progress of a re-created topic, without Kafka (issue 42, finding 2): the progress is
 * committed with the source and remote topics' ids the driver passes (option {@code topicIds}), and
 * progress committed for other ids, read back or kept in a pooled producer, skips nothing of the new
 * topic; progress of an earlier version (no ids) is still read and used. Its pairs are kept as distances
 * from the run before, so a transactional source's many short runs fit. Run by tests/unit/test_jvm_units.py.
 */
public final class TopicGenerationsUnitTests {
    private TopicGenerationsUnitTests() {
    }

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

    public static void main(String[] args) {
        // The driver's ids, per remote topic.
        WriteSettings s = WriteSettings.from(schema(), options("orders\tS1-_x\tR1\npayments\t\t\nother\tS9\tR9"));
        check("S1-_x|R1".equals(s.topicsOf("a.orders")), "ids of a renamed topic: " + s.topicsOf("a.orders"));
        check("|".equals(s.topicsOf("a.payments")), "ids not known yet are empty");
        check(s.topicsOf("other") == null && s.topicsOf("a.other") == null, "a topic the plan does not copy");
        check(WriteSettings.from(schema(), options(null)).topicsOf("a.orders") == null, "no option: not told");
        WriteSettings librdkafka = WriteSettings.from(schema(), options("orders\t+/////////9+/////////w\t/////////////////////w"));
        check("+/////////9+/////////w|/////////////////////w".equals(librdkafka.topicsOf("a.orders")),
            "ids in librdkafka's standard base64 ('+' and '/')");
        check(Progress.decode(1, Progress.encode(librdkafka.topicsOf("a.orders"), new long[0]))
            .heldFor(librdkafka.topicsOf("a.orders")) && !Progress.decode(1, Progress.encode(
            librdkafka.topicsOf("a.orders"), new long[0])).heldFor("+/////////9+/////////w|AAAAAAdbzRUAAAAAOt5osQ"),
            "such ids round trip and compare");
        for (String bad : new String[] {"orders\tS1", "orders\tS|1\tR1", "\tS1\tR1", "orders\tS1\tR1\tx"}) {
            String error = null;
            try {
                WriteSettings.from(schema(), options(bad));
            } catch (IllegalArgumentException e) {
                error = e.getMessage();
            }
            check(error != null && error.contains("'topicIds' option has a bad line"), "refused: " + bad);
        }

        // Committed with the ids, read back with them.
        long[] runs = {100, 5_000, 50, 152, 5_051, 10};
        Progress committed = Progress.decode(162, Progress.encode("S1|R1", runs));
        check("S1|R1".equals(committed.topics) && !committed.partial, "ids and pairs round trip: " + committed);
        check(committed.downstream(149) == 5_049 && committed.downstream(161) == 5_060
            && committed.downstream(150) == -1, "pairs round trip");
        check(committed.heldFor("S1|R1") && committed.heldFor("S1|") && committed.heldFor("|R1")
            && committed.heldFor(null), "the same topics, or ids not known for the batch: used");
        check(!committed.heldFor("S2|R1"), "the source topic re-created: not used");
        check(!committed.heldFor("S1|R2"), "the remote topic re-created: not used");
        check(Progress.decode(162, Progress.encode("|R1", runs)).heldFor("S2|R1"), "committed without the source id");

        // A batch of the re-created source topic: nothing of it is committed, every row is sent.
        Progress forNew = Progress.forTopics(committed, "S2|R1");
        check(forNew == Progress.NONE, "an older topic's progress gives way to none");
        check(Progress.forTopics(committed, "S1|R1") == committed, "the same topic's progress is kept");
        Transactions.Entry entry = new Transactions.Entry("p-a.orders-0", null, new TopicPartition("a.orders", 0), forNew);
        TaskTransactions.Open txn = new TaskTransactions.Open(entry, new PartitionAcks("a.orders", 0));
        check(!TaskTransactions.committed(txn, 0) && !TaskTransactions.committed(txn, 120), "rows below the old next are sent");

        // Metadata of the earlier version: read, no ids, used for any topics.
        Progress v1 = Progress.decode(162, "ms1;100:5000:50,152:5051:10");
        check(v1.topics == null && v1.heldFor("S2|R2") && v1.downstream(160) == 5_059 && !v1.partial,
            "an earlier version's progress is still read and used");
        check(Progress.decode(10, "ms1p;5:105:5").partial, "an earlier version's partial flag");
        check(Progress.decode(10, "ms2;S1|R1;1:x:3").downstream(1) == -1, "damaged pairs give none");
        check(Progress.decode(10, "ms2;S1|R1").downstream(1) == -1 && Progress.decode(10, "ms2;S1|R1").committed(5),
            "damaged metadata still says what is committed");
        check(Progress.decode(10, Progress.encode("S1|R1", new long[] {0, 100, 5, 5, -1, 0})).downstream(4) == 104,
            "a break is not committed as a pair");

        // A transactional source: a marker after every 3 records, 2,000 short runs in one transaction.
        long[] marked = new long[3 * 2_000];
        for (int i = 0; i < 2_000; i++) {
            marked[3 * i] = 1_000_000L + 4L * i;
            marked[3 * i + 1] = 7_000_000L + 3L * i;
            marked[3 * i + 2] = 3;
        }
        String meta = Progress.encode("S1|R1", marked);
        Progress q = Progress.decode(1_008_000, meta);
        check(meta.length() <= Progress.MAX_METADATA && q.partial, "too many runs fit and say so: " + meta.length());
        check(q.downstream(1_000_000L + 4L * 1_999 + 2) == 7_000_000L + 3L * 1_999 + 2, "the newest pair is kept");
        check(q.downstream(1_000_000L + 4L * 1_600) == 7_000_000L + 3L * 1_600, "400 short runs kept, not 180");
        check(q.downstream(1_000_000L) == -1, "the oldest are dropped");
        UnitChecks.done();
    }
}
