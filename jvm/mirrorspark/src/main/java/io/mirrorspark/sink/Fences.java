package io.mirrorspark.sink;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How long this JVM may still write each flow's records: the driver's lease thread renews the
 * deadline (wall-clock milliseconds) about every second while the flow's lease on the target is
 * confirmed. A JVM stopped past its deadline (SIGSTOP, a long pause) finds it expired when it
 * runs again, and its tasks send nothing more: another instance holds the flow by then.
 * A flow never renewed in this JVM (executors of a cluster, a flow without a lease) is not fenced
 * here; its driver refuses the next batch instead.
 */
public final class Fences {
    private static final ConcurrentHashMap<String, AtomicLong> UNTIL = new ConcurrentHashMap<>();

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

    /** The flow no longer runs here with a lease (stopped, or leases switched off): no fence. */
    public static void forget(String flow) {
        UNTIL.remove(flow);
    }

    /** The deadline holder of {@code flow}, or null when this JVM has none. */
    static AtomicLong of(String flow) {
        return UNTIL.get(flow);
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
