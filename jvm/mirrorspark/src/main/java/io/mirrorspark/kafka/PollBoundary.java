package io.mirrorspark.kafka;

/**
 * Real-time mode: the moment a task's source has handed over every record its fetches showed and is
 * about to wait for more. A real-time task reads and writes in one thread, so the sink registers what
 * it does then (exactly-once: commit the task's transaction, as MM2's {@code transaction.boundary =
 * poll} commits each poll's records) and the source calls it; no record waits in an open transaction
 * while the task waits for the next one. A drained fetch with more on its way is no boundary: the
 * sink commits such a transaction by age.
 */
public final class PollBoundary {
    private static final ThreadLocal<Runnable> HOOK = new ThreadLocal<>();

    private PollBoundary() {
    }

    /** What the current thread's sink does at each boundary (replaces any earlier one). */
    public static void register(Runnable hook) {
        HOOK.set(hook);
    }

    /** The current thread's sink is done: nothing runs at the next boundary. */
    public static void clear() {
        HOOK.remove();
    }

    /** True when the current thread's sink waits for boundaries. */
    public static boolean wanted() {
        return HOOK.get() != null;
    }

    /** The source polled everything it had: the sink's hook runs, in this thread. */
    public static void reached() {
        Runnable hook = HOOK.get();
        if (hook != null) {
            hook.run();
        }
    }
}
