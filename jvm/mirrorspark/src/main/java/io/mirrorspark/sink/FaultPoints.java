package io.mirrorspark.sink;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/**
 * Named moments of an exactly-once write where the fault drills stop a JVM for good: with
 * {@code MIRRORSPARK_FAULT_POINT = <moment>:<min sent>:<min in transaction>:<marker file>} in its
 * environment, the first task that reaches {@code moment} in a transaction of at least {@code min in
 * transaction} records, once the JVM has sent at least {@code min sent} records in transactions,
 * creates the marker (holding
 * the JVM's pid) and waits there until the drill kills the process with {@code kill -9}. The marker
 * makes it happen once: a restarted process (or a new executor with the same environment) passes.
 * {@code <moment>@<topic>} counts only transactions on that target topic.
 * With {@code hold-<moment>} the task waits there only until the drill writes {@code release} into the
 * marker (a fault made meanwhile, such as a topic deleted, then meets the rest of the transaction); a
 * task cancelled while held fails. Unset (always, outside the drills) it costs one null check.
 */
final class FaultPoints {
    static final String SENT = "sent";
    static final String BEFORE_COMMIT = "before-commit";
    static final String AFTER_COMMIT = "after-commit";
    /** A partition's transaction is about to begin: its first record is next. */
    static final String BEGIN = "begin";
    private static final String HOLD = "hold-";
    private static final String RELEASE = "release";
    private static final String SPEC = System.getenv("MIRRORSPARK_FAULT_POINT");

    private FaultPoints() {
    }

    static void reached(String moment, long sent, long inTransaction) {
        reached(moment, null, sent, inTransaction);
    }

    /** {@code topic}: the target topic of the transaction, which {@code <moment>@<topic>} may name. */
    static void reached(String moment, String topic, long sent, long inTransaction) {
        if (SPEC == null) {
            return;
        }
        String[] f = SPEC.split(":", 4);
        boolean hold = f[0].startsWith(HOLD);
        String[] named = (hold ? f[0].substring(HOLD.length()) : f[0]).split("@", 2);
        if (named.length == 2 && !named[1].equals(topic)) {
            return;
        }
        if (f.length != 4 || !named[0].equals(moment) || sent < Long.parseLong(f[1])
            || inTransaction < Long.parseLong(f[2])) {
            return;
        }
        Path marker = Paths.get(f[3]);
        try {
            Files.write(marker, ManagementFactory.getRuntimeMXBean().getName().split("@")[0]
                .getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE);
        } catch (FileAlreadyExistsException e) {
            return;
        } catch (IOException e) {
            throw new IllegalStateException("fault point " + moment + ": cannot write " + marker, e);
        }
        if (hold) {
            held(moment, marker);
            return;
        }
        while (true) {
            try {
                Thread.sleep(60_000L);
            } catch (InterruptedException e) {
                // the task was cancelled: stay, the drill kills the JVM
            }
        }
    }

    /** Waits until the drill writes {@code release} into {@code marker}; a cancelled task fails here. */
    private static void held(String moment, Path marker) {
        try {
            while (!new String(Files.readAllBytes(marker), StandardCharsets.UTF_8).trim().equals(RELEASE)) {
                Thread.sleep(100L);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("fault point hold-" + moment + ": the task was cancelled while held", e);
        } catch (IOException e) {
            throw new IllegalStateException("fault point hold-" + moment + ": cannot read " + marker, e);
        }
    }
}
