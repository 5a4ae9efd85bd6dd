package io.mirrorspark.sink;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import io.mirrorspark.kafka.FlowStats;
import io.mirrorspark.kafka.JvmShared;
import io.mirrorspark.kafka.OffsetRunList;
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
    private static final String UNRESOLVED = "io.mirrorspark.sink.WrittenBatches.unresolved";

    private WrittenBatches() {
    }

    static void accept(String flow, WriterCommitMessage[] messages) {
        Map<String, OffsetRunList> runs = new HashMap<>();
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
                if (part.unresolvedSchemas > 0) {
                    JvmShared.<String>map(UNRESOLVED).merge(flow,
                        part.topic + '\t' + part.partition + '\t' + part.unresolvedSchemas + '\n', String::concat);
                }
                runs.computeIfAbsent(part.topic + '\u0000' + part.partition, k -> new OffsetRunList()).addAll(part.runs());
            }
        }
        // Each source partition is read by one task (mirrorspark never sets minPartitions); the runs
        // are still handed over in source order, as the offset mapping expects them. A break keeps
        // its place: it carries the source offset of the first record it stands for.
        for (Map.Entry<String, OffsetRunList> entry : runs.entrySet()) {
            int split = entry.getKey().lastIndexOf('\u0000');
            String topic = entry.getKey().substring(0, split);
            int partition = Integer.parseInt(entry.getKey().substring(split + 1));
            OffsetRuns.add(flow, topic, partition, entry.getValue().sortedBySource());
        }
    }

    /** Real-time mode: the epoch handed over and the last one the driver recorded, per flow. */
    private static final class Handshake {
        long pending = -1L;
        long taken = -1L;
        String refused;
        boolean woken;  // the driver's recorder stops: its wait returns at once
    }

    private static final String HANDSHAKES = "io.mirrorspark.sink.WrittenBatches.handshakes";

    private static Handshake handshake(String flow) {
        return JvmShared.<Handshake>map(HANDSHAKES).computeIfAbsent(flow, k -> new Handshake());
    }

    /**
     * A real-time epoch's reports, handed to the driver's Python; returns once it has recorded them
     * ({@link #taken}). Waiting longer than {@code waitMs} fails the epoch: Spark must not commit a
     * batch whose pairs nobody recorded.
     */
    static void acceptEpoch(String flow, long epoch, WriterCommitMessage[] messages, long waitMs) {
        accept(flow, messages);
        Handshake h = handshake(flow);
        long deadline = System.currentTimeMillis() + waitMs;
        synchronized (h) {
            h.pending = epoch;
            h.notifyAll();
            try {
                while (h.taken < epoch) {
                    if (h.refused != null) {
                        String why = h.refused;
                        h.refused = null;
                        h.pending = h.taken;
                        throw new IllegalStateException("flow " + flow + ": real-time batch " + epoch
                            + " could not be recorded by the driver (" + why + "); it is not committed");
                    }
                    long left = deadline - System.currentTimeMillis();
                    if (left <= 0) {
                        throw new IllegalStateException("flow " + flow + ": real-time batch " + epoch
                            + " was not recorded by the driver within " + waitMs + " ms; it is not committed");
                    }
                    h.wait(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("flow " + flow + ": stopped while real-time batch " + epoch
                    + " was being recorded; it is not committed", e);
            }
        }
    }

    /**
     * The epoch waiting to be recorded, waiting up to {@code waitMs} for one; -1 when none, or when
     * {@link #wake} was called meanwhile. The driver's recorder waits long (each wait is a py4j call,
     * and an idle flow made two a second) and is woken when it stops.
     */
    public static long awaitEpoch(String flow, long waitMs) throws InterruptedException {
        Handshake h = handshake(flow);
        long deadline = System.currentTimeMillis() + waitMs;
        synchronized (h) {
            while (h.pending <= h.taken) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0 || h.woken) {
                    h.woken = false;
                    return -1L;
                }
                h.wait(left);
            }
            return h.pending;
        }
    }

    /** The recorder of {@code flow} stops: its wait in {@link #awaitEpoch} (or its next one) returns -1 now. */
    public static void wake(String flow) {
        Handshake h = handshake(flow);
        synchronized (h) {
            h.woken = true;
            h.notifyAll();
        }
    }

    /** The driver recorded {@code epoch}: its commit goes on. */
    public static void taken(String flow, long epoch) {
        Handshake h = handshake(flow);
        synchronized (h) {
            h.taken = Math.max(h.taken, epoch);
            h.notifyAll();
        }
    }

    /** The driver could not record {@code epoch}: its commit fails, and Spark replays the batch. */
    public static void refuse(String flow, long epoch, String why) {
        Handshake h = handshake(flow);
        synchronized (h) {
            if (h.pending == epoch) {
                h.refused = why;
                h.notifyAll();
            }
        }
    }

    /** A new real-time query of the flow: epochs count from its first batch again. */
    public static void resetEpochs(String flow) {
        Handshake h = handshake(flow);
        synchronized (h) {
            h.pending = -1L;
            h.taken = -1L;
            h.refused = null;
            h.woken = false;
            h.notifyAll();
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

    /**
     * Lines {@code topic TAB partition TAB records} since the last call: records sent with a schema id
     * neither registry knows, copied unchanged ({@code mirrorspark.schemas.unresolved = copy}).
     */
    public static String drainUnresolved(String flow) {
        String taken = JvmShared.<String>map(UNRESOLVED).remove(flow);
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
