package io.mirrorspark.sink;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import io.mirrorspark.kafka.FlowStats;
import io.mirrorspark.kafka.JvmShared;
import io.mirrorspark.kafka.OffsetRuns;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * Driver side: the commit messages of a batch become {@link OffsetRuns} and {@link FlowStats}
 * entries of the flow (drained by Python after {@code save()} returns), and the executors that
 * wrote are remembered for the REST flow detail.
 */
public final class WrittenBatches {
    private static final String EXECUTORS = "io.mirrorspark.sink.WrittenBatches.executors";
    private static final String RESUMED = "io.mirrorspark.sink.WrittenBatches.resumed";

    private WrittenBatches() {
    }

    static void accept(String flow, WriterCommitMessage[] messages) {
        Map<String, List<long[]>> runs = new HashMap<>();
        Set<String> executors = executors(flow);
        for (WriterCommitMessage message : messages) {
            if (!(message instanceof TaskReport)) {
                continue;
            }
            TaskReport report = (TaskReport) message;
            executors.add(report.executor);
            for (PartitionAcks part : report.partitions) {
                FlowStats.merge(flow, part.topic, part.partition, part.stats());
                if (part.resumed > 0 || part.recopied > 0) {
                    JvmShared.<String>map(RESUMED).merge(flow,
                        part.topic + '\t' + part.partition + '\t' + part.resumed + '\t' + part.recopied + '\n', String::concat);
                }
                long[] triples = part.runs();
                List<long[]> list = runs.computeIfAbsent(part.topic + '\u0000' + part.partition, k -> new ArrayList<>());
                for (int i = 0; i < triples.length; i += 3) {
                    list.add(new long[] {triples[i], triples[i + 1], triples[i + 2]});
                }
            }
        }
        // Each source partition is read by one task (mirrorspark never sets minPartitions); the runs
        // are still handed over in source order, as the offset mapping expects them.
        for (Map.Entry<String, List<long[]>> entry : runs.entrySet()) {
            int split = entry.getKey().lastIndexOf('\u0000');
            String topic = entry.getKey().substring(0, split);
            int partition = Integer.parseInt(entry.getKey().substring(split + 1));
            List<long[]> list = entry.getValue();
            list.sort(Comparator.comparingLong(r -> r[0]));
            for (long[] r : list) {
                OffsetRuns.add(flow, topic, partition, r[0], r[1], r[2]);
            }
        }
    }

    private static Set<String> executors(String flow) {
        return JvmShared.<Set<String>>map(EXECUTORS).computeIfAbsent(flow, k -> ConcurrentHashMap.newKeySet());
    }

    /**
     * Lines {@code topic TAB partition TAB resumed TAB recopied} since the last call: rows of a
     * re-run batch found already on the target, and target records the re-run wrote again.
     */
    public static String drainResumed(String flow) {
        String taken = JvmShared.<String>map(RESUMED).remove(flow);
        return taken == null ? "" : taken;
    }

    /** Executors that wrote for {@code flow} since the last call, comma separated and sorted. */
    public static String drainExecutors(String flow) {
        Set<String> set = executors(flow);
        TreeSet<String> taken = new TreeSet<>();
        for (String e : set) {
            taken.add(e);
            set.remove(e);
        }
        return String.join(",", taken);
    }
}
