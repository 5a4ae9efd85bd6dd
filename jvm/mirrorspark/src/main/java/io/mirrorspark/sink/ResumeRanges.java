package io.mirrorspark.sink;

import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Where a real-time query's first batch resumes on the target, given by the driver's Python after
 * the query started (sink option {@code resumeLater}). Finding it asks the target's end of every
 * remote partition, which on a first start waits for the partitions the flow just created to get
 * their leaders; Spark plans the query meanwhile, and the first batch's write waits here, before
 * any task sends (docs/adr/0027-grouped-source-real-time.md, section 9). With them comes where this
 * start's writes begin on each target partition: a task attempt Spark runs again (an executor lost)
 * compares from there with the target, as a micro-batch's retried attempt does (section 16).
 */
public final class ResumeRanges {
    /** Per start of a query (the sink's {@code resumeRun}): what the driver gave, once given. */
    private static final ConcurrentHashMap<String, CompletableFuture<Given>> GIVEN = new ConcurrentHashMap<>();

    /** The ranges to compare ({@code resume} format) and each target partition's start ({@code retryFrom} format). */
    record Given(HashMap<String, long[]> ranges, HashMap<String, Long> retryFrom) {
    }

    private ResumeRanges() {
    }

    private static CompletableFuture<Given> slot(String run) {
        return GIVEN.computeIfAbsent(run, r -> new CompletableFuture<>());
    }

    /** The ranges of the start {@code run} (the sink's {@code resume} format; empty: nothing to compare). */
    public static void give(String run, String ranges) {
        give(run, ranges, "");
    }

    /** {@link #give(String, String)} with where each target partition's writes begin (lines topic TAB partition TAB offset). */
    public static void give(String run, String ranges, String retryFrom) {
        slot(run).complete(new Given(WriteSettings.resume(ranges), WriteSettings.retryFrom(retryFrom)));
    }

    /**
     * The ranges of {@code run}, waited for up to {@code waitMs}. A query stopped meanwhile ends as
     * stopped (Spark takes an interrupted I/O for a stop), a wait that runs out fails the query.
     */
    static Given await(String run, long waitMs) {
        CompletableFuture<Given> given = slot(run);
        try {
            return given.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            InterruptedIOException stopped = new InterruptedIOException("stopped while waiting for where to resume");
            stopped.initCause(e);
            throw new UncheckedIOException(stopped);
        } catch (ExecutionException e) {
            throw new IllegalStateException("where to resume could not be found: " + e.getCause().getMessage(),
                e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("the driver did not say where to resume on the target within "
                + waitMs + " ms; the query is started again", e);
        } finally {
            GIVEN.remove(run, given);
        }
    }

    /** Starts whose ranges are waited for or given and not yet taken (for tests). */
    static int held() {
        return GIVEN.size();
    }
}
