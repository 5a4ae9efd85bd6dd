package io.mirrorspark.source;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Real-time flows being stopped, on the driver: their readers end the batch in flight at once
 * instead of at its deadline, so the batch commits and mirrorspark records what it wrote before the
 * query stops. A real-time batch cut off by the stop was not recorded: its copies were compared with
 * the target only at the next start, and a first batch of a flow was not known to have written at
 * all (docs/adr/0027-grouped-source-real-time.md, section 17). Executors in JVMs of their own do not
 * see it: their batch is cut off, and compared at the next start, as before.
 */
public final class BatchEnds {
    private static final Set<String> ENDING = ConcurrentHashMap.newKeySet();

    private BatchEnds() {
    }

    /** The flow's readers end each batch from now on as soon as they are asked for a record. */
    public static void request(String flow) {
        ENDING.add(flow);
    }

    /** A new query of the flow reads batches to their deadline again. */
    public static void clear(String flow) {
        ENDING.remove(flow);
    }

    static boolean requested(String flow) {
        return !ENDING.isEmpty() && ENDING.contains(flow);
    }
}
