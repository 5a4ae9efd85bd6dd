package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.junit.jupiter.api.Test;

/**
 * A batch's plan from its start and end offsets, without brokers or Spark: no partition is new in
 * these batches, so the stream never needs its consumer.
 */
final class GroupedMicroBatchStreamTest {

    private static GroupedMicroBatchStream stream(int groups) {
        Map<String, String> options = new HashMap<>();
        options.put("kafka.bootstrap.servers", "unused:9092");
        options.put("subscribePattern", "t|u|gone");
        options.put("groups", String.valueOf(groups));
        return new GroupedMicroBatchStream(new SourceSettings(options), "unused-checkpoint");
    }

    private static Map<TopicPartition, Long> offsets(Object... topicPartitionOffset) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (int i = 0; i < topicPartitionOffset.length; i += 3) {
            out.put(new TopicPartition((String) topicPartitionOffset[i], (Integer) topicPartitionOffset[i + 1]),
                (Long) topicPartitionOffset[i + 2]);
        }
        return out;
    }

    private static List<List<String>> plan(int groups, Map<TopicPartition, Long> start, Map<TopicPartition, Long> end) {
        InputPartition[] tasks = stream(groups).planInputPartitions(new PartitionOffsets(start), new PartitionOffsets(end));
        List<List<String>> out = new ArrayList<>();
        for (InputPartition task : tasks) {
            List<String> ranges = new ArrayList<>();
            for (OffsetRange r : ((GroupPartition) task).ranges) {
                ranges.add(r.topic + "-" + r.partition + ":" + r.from + ".." + r.until);
            }
            ranges.sort(null);
            out.add(ranges);
        }
        return out;
    }

    @Test
    void eachPartitionIsReadFromItsStartToItsEnd() {
        List<List<String>> tasks = plan(1, offsets("t", 0, 5L, "t", 1, 0L, "u", 0, 7L),
            offsets("t", 0, 10L, "t", 1, 3L, "u", 0, 7L));
        assertEquals(List.of(List.of("t-0:5..10", "t-1:0..3")), tasks, "a partition without new records is not planned");
    }

    @Test
    void theRecordsAreSpreadOverTheGroups() {
        List<List<String>> tasks = plan(2, offsets("t", 0, 0L, "t", 1, 0L, "u", 0, 0L),
            offsets("t", 0, 100L, "t", 1, 60L, "u", 0, 50L));
        assertEquals(2, tasks.size(), "two tasks");
        List<String> all = new ArrayList<>();
        tasks.forEach(all::addAll);
        all.sort(null);
        assertEquals(List.of("t-0:0..100", "t-1:0..60", "u-0:0..50"), all, "every partition planned once");
        assertTrue(tasks.contains(List.of("t-0:0..100")), "the busiest partition alone: " + tasks);
    }

    @Test
    void aPartitionGoneOrGoneBackIsNotPlanned() {
        // gone-0 left the source (its topic deleted); u-0 ends below its start (its topic re-created).
        List<List<String>> tasks = plan(4, offsets("t", 0, 5L, "gone", 0, 3L, "u", 0, 40L),
            offsets("t", 0, 9L, "u", 0, 2L));
        assertEquals(List.of(List.of("t-0:5..9")), tasks, "only the partition still there, read forward");
    }

    @Test
    void nothingNewPlansNoTask() {
        Map<TopicPartition, Long> same = offsets("t", 0, 5L);
        assertEquals(0, stream(2).planInputPartitions(new PartitionOffsets(same), new PartitionOffsets(same)).length,
            "nothing to read, no task");
    }

    @Test
    void theOffsetSparkHandsBackIsParsedOnce() {
        GroupedMicroBatchStream s = stream(2);
        String json = new PartitionOffsets(offsets("t", 0, 5L, "u", 1, 7L)).json();
        Offset first = s.deserializeOffset(json);
        assertEquals(offsets("t", 0, 5L, "u", 1, 7L), ((PartitionOffsets) first).positions(), "parsed");
        assertSame(first, s.deserializeOffset(new String(json.toCharArray())), "the same JSON again: the same offset");
        assertEquals(offsets("t", 0, 6L, "u", 1, 7L),
            ((PartitionOffsets) s.deserializeOffset(new PartitionOffsets(offsets("t", 0, 6L, "u", 1, 7L)).json()))
                .positions(), "another JSON: parsed anew");
    }
}
