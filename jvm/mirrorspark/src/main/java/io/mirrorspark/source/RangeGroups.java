package io.mirrorspark.source;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

import org.apache.kafka.common.TopicPartition;

/**
 * Spreads a batch's offset ranges over at most {@code groups} tasks, each read by one consumer (as
 * MM2's tasks own several partitions). The largest ranges are placed first, each on the group with
 * the fewest records so far, so a busy partition does not share its task with other busy ones
 * (MM2 assigns round-robin, blind to load). A partition is never split: its records stay in order
 * in one task.
 */
public final class RangeGroups {
    private RangeGroups() {
    }

    public static List<List<OffsetRange>> split(List<OffsetRange> ranges, int groups) {
        List<OffsetRange> sorted = new ArrayList<>();
        for (OffsetRange r : ranges) {
            if (r.size() > 0) {
                sorted.add(r);
            }
        }
        sorted.sort(Comparator.comparingLong(OffsetRange::size).reversed()
            .thenComparing(r -> r.topic).thenComparingInt(r -> r.partition));
        int count = Math.max(1, Math.min(groups, sorted.size()));
        List<List<OffsetRange>> out = new ArrayList<>();
        long[] load = new long[count];
        PriorityQueue<Integer> lightest = new PriorityQueue<>(
            Comparator.<Integer>comparingLong(i -> load[i]).thenComparingInt(i -> i));
        for (int i = 0; i < count; i++) {
            out.add(new ArrayList<>());
            lightest.add(i);
        }
        for (OffsetRange r : sorted) {
            int g = lightest.poll();
            out.get(g).add(r);
            load[g] += r.size();
            lightest.add(g);
        }
        out.removeIf(List::isEmpty);
        return out;
    }

    /**
     * Real-time mode: partitions have no end, so they are dealt in turn (sorted by topic, then
     * partition) over at most {@code groups} tasks, as MM2 assigns its tasks; the layout is the
     * same for the same partitions, batch after batch.
     */
    public static List<List<TopicPartition>> splitOpen(List<TopicPartition> partitions, int groups) {
        List<TopicPartition> sorted = new ArrayList<>(partitions);
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        int count = Math.max(1, Math.min(groups, sorted.size()));
        List<List<TopicPartition>> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(new ArrayList<>());
        }
        for (int i = 0; i < sorted.size(); i++) {
            out.get(i % count).add(sorted.get(i));
        }
        out.removeIf(List::isEmpty);
        return out;
    }
}
