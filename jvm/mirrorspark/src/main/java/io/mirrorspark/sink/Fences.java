package io.mirrorspark.sink;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How long this JVM may still write each flow's records: the driver's lease thread renews the
 * deadline (wall-clock milliseconds) about every second while the flow's lease on the target is
 * confirmed. A JVM stopped past its deadline (SIGSTOP, a long pause) finds it expired when it
 * runs again, and its tasks send nothing more: another instance holds the flow by then.
 * A flow never renewed in this JVM (executors of a cluster) reads its deadline from the target
 * instead ({@link LeaseWatch}); a flow without a lease is not fenced.
 *
 * <p>The check comes before {@code send}: records a JVM had handed to its producer before it was
 * stopped still leave when it runs again (Kafka has no conditional append outside transactions).
 * Their acknowledgements arrive after the deadline, and are kept here ({@link #lateWrites}) so the
 * driver can count which of them the new writer copied too: a copy made twice is reported, never
 * silent.
 */
public final class Fences {
    private static final ConcurrentHashMap<String, AtomicLong> UNTIL = new ConcurrentHashMap<>();
    /** Per flow, per target partition ("topic:partition"): records acknowledged after the deadline. */
    private static final ConcurrentHashMap<String, ConcurrentHashMap<String, Late>> LATE = new ConcurrentHashMap<>();
    /** Per flow, per target partition: the highest offset acknowledged while the deadline held. */
    private static final ConcurrentHashMap<String, ConcurrentHashMap<String, AtomicLong>> VALID =
        new ConcurrentHashMap<>();
    /** Late offsets kept per partition; beyond it they are only counted. */
    static final int KEPT = 100_000;

    private Fences() {
    }

    /** The lease of {@code flow} is confirmed until {@code untilMillis} (wall clock). */
    public static void renew(String flow, long untilMillis) {
        UNTIL.computeIfAbsent(flow, f -> new AtomicLong()).set(untilMillis);
    }

    /** The flow's lease is gone: nothing more may be written for it in this JVM. */
    public static void revoke(String flow) {
        UNTIL.computeIfAbsent(flow, f -> new AtomicLong()).set(0L);
    }

    /**
     * The flow's producers in this JVM are closed at once, dropping what they hold unsent: called when a
     * remote topic deleted on the target is about to be made again, so that sends of the stopped query
     * that the producers still retry for the deleted topic cannot land in the new one ahead of its
     * refill (the refill copies those records itself). Returns how many were closed.
     */
    public static int dropUnsent(String flow) {
        return Producers.abort(flow);
    }

    /** The flow no longer runs here with a lease (stopped, or leases switched off): no fence. */
    public static void forget(String flow) {
        UNTIL.remove(flow);
        VALID.remove(flow);
    }

    /** The deadline holder of {@code flow}, or null when this JVM has none. */
    static AtomicLong of(String flow) {
        return UNTIL.get(flow);
    }

    /** True when {@code deadline} (from {@link #of}) is set and has passed. */
    static boolean expired(AtomicLong deadline) {
        return deadline != null && System.currentTimeMillis() > deadline.get();
    }

    /** {@code offset} of the target partition was acknowledged while the flow's lease held. */
    static void acknowledged(String flow, String topic, int partition, long offset) {
        VALID.computeIfAbsent(flow, f -> new ConcurrentHashMap<>())
            .computeIfAbsent(topic + ":" + partition, k -> new AtomicLong(-1L))
            .accumulateAndGet(offset, Math::max);
    }

    /**
     * {@code offset} of the target partition was acknowledged after the flow's deadline had passed;
     * {@code validBefore}: the highest offset the same task had acknowledged in time (-1: none);
     * {@code upstream}: the source offset the record is a copy of (-1: not known).
     */
    static void late(String flow, String topic, int partition, long offset, long validBefore, long upstream) {
        String key = topic + ":" + partition;
        AtomicLong valid = VALID.getOrDefault(flow, new ConcurrentHashMap<>()).get(key);
        long before = Math.max(validBefore, valid == null ? -1L : valid.get());
        LATE.computeIfAbsent(flow, f -> new ConcurrentHashMap<>())
            .computeIfAbsent(key, k -> new Late(topic, partition))
            .add(offset, before, upstream);
    }

    /**
     * The records of {@code flow} acknowledged after its deadline, as JSON, once the producers have
     * sent what they held (waiting at most {@code flushMillis}); the list is then cleared. Each entry:
     * the target topic and partition, {@code from} (the first offset another writer can have
     * written: every offset before it was acknowledged in time; -1 when unknown), the late
     * offsets, how many more were not kept, and {@code upstream}: the source offset after the last
     * one they copy (-1 when unknown), which a new writer's copies must pass before no twin can come.
     */
    public static String lateWrites(String flow, long flushMillis) {
        boolean flushed = true;
        try {
            CompletableFuture.runAsync(Producers::flushAll).get(flushMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            flushed = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            flushed = false;
        }
        Map<String, Late> late = LATE.remove(flow);
        StringBuilder out = new StringBuilder("{\"flushed\":").append(flushed).append(",\"partitions\":[");
        if (late != null) {
            List<Late> all = new ArrayList<>(late.values());
            for (int i = 0; i < all.size(); i++) {
                out.append(i == 0 ? "" : ",").append(all.get(i).json());
            }
        }
        return out.append("]}").toString();
    }

    /**
     * The late acknowledgements of {@code flow} kept in this JVM, as {@link #lateWrites}' partitions
     * (JSON), without waiting for the producers; null when there are none. They are cleared: an
     * executor of its own logs them ({@link LeaseWatch}), no driver reads them there.
     */
    static String takeLate(String flow) {
        Map<String, Late> late = LATE.remove(flow);
        VALID.remove(flow);
        if (late == null || late.isEmpty()) {
            return null;
        }
        StringBuilder out = new StringBuilder("[");
        List<Late> all = new ArrayList<>(late.values());
        for (int i = 0; i < all.size(); i++) {
            out.append(i == 0 ? "" : ",").append(all.get(i).json());
        }
        return out.append("]").toString();
    }

    /** Throws when {@code deadline} (from {@link #of}) has passed. */
    static void check(String flow, AtomicLong deadline) throws IOException {
        if (deadline != null) {
            long until = deadline.get();
            long now = System.currentTimeMillis();
            if (now > until) {
                throw new FencedException(flow, until == 0L ? -1L : now - until);
            }
        }
    }

    /** The late acknowledgements of one target partition. */
    private static final class Late {
        private final String topic;
        private final int partition;
        private long from = -1L;
        private long[] offsets = new long[16];
        private int count;
        private long dropped;
        private long upstreamEnd = -1L;

        Late(String topic, int partition) {
            this.topic = topic;
            this.partition = partition;
        }

        synchronized void add(long offset, long validBefore, long upstream) {
            from = Math.max(from, validBefore < 0 ? -1L : validBefore + 1);
            if (upstream >= 0) {
                upstreamEnd = Math.max(upstreamEnd, upstream + 1);
            }
            if (count == KEPT) {
                dropped++;
                return;
            }
            if (count == offsets.length) {
                offsets = Arrays.copyOf(offsets, Math.min(KEPT, count * 2));
            }
            offsets[count++] = offset;
        }

        synchronized String json() {
            StringBuilder out = new StringBuilder("{\"topic\":\"").append(topic).append("\",\"partition\":")
                .append(partition).append(",\"from\":").append(from)
                .append(",\"dropped\":").append(dropped).append(",\"upstream\":").append(upstreamEnd)
                .append(",\"offsets\":[");
            for (int i = 0; i < count; i++) {
                out.append(i == 0 ? "" : ",").append(offsets[i]);
            }
            return out.append("]}").toString();
        }
    }

    /** A write refused because this JVM no longer holds the flow's lease. */
    public static final class FencedException extends IOException {
        private static final long serialVersionUID = 1L;

        FencedException(String flow, long lateMillis) {
            super("flow " + flow + ": fenced: this instance no longer holds the flow's lease"
                + (lateMillis >= 0 ? " (its last confirmation expired " + lateMillis + " ms ago)" : "")
                + "; another instance writes the flow, nothing more is sent from here");
        }
    }
}
