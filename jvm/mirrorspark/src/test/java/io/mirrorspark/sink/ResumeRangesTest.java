package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * A real-time query's first batch waits for where to resume, given by the driver after the query
 * started: nothing is written before, a stop ends the wait as a stop, and a driver that never
 * answers fails the query instead of holding it forever.
 */
final class ResumeRangesTest {
    private static final String A = WriteSettings.key("t", 0);

    @Test
    void rangesGivenBeforeTheFirstBatchAreTakenOnce() {
        ResumeRanges.give("run-given", "t\t0\t100\t140\n", "t\t0\t100\nt\t1\t7\n");
        ResumeRanges.Given given = ResumeRanges.await("run-given", 1000);
        assertArrayEquals(new long[] {100, 140}, given.ranges().get(A));
        assertEquals(Map.of(A, 100L, WriteSettings.key("t", 1), 7L), given.retryFrom(),
            "where each partition's writes begin comes with them");
        assertEquals(0, ResumeRanges.held(), "taken: nothing kept");
    }

    @Test
    void theFirstBatchWaitsUntilTheRangesAreGiven() throws Exception {
        CompletableFuture<HashMap<String, long[]>> waiting =
            CompletableFuture.supplyAsync(() -> ResumeRanges.await("run-later", 30_000).ranges());
        Thread.sleep(200);
        assertTrue(!waiting.isDone(), "nothing given yet: still waiting");
        ResumeRanges.give("run-later", "");
        assertTrue(waiting.get(10, TimeUnit.SECONDS).isEmpty(), "no ranges: nothing to compare");
        assertEquals(0, ResumeRanges.held());
    }

    @Test
    void aStopWhileWaitingEndsAsAnInterruptedIo() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread batch = new Thread(() -> {
            try {
                ResumeRanges.await("run-stopped", 30_000);
            } catch (RuntimeException e) {
                thrown.set(e);
            }
        });
        batch.start();
        Thread.sleep(200);
        batch.interrupt();
        batch.join(10_000);
        UncheckedIOException stopped = assertInstanceOf(UncheckedIOException.class, thrown.get());
        assertInstanceOf(InterruptedIOException.class, stopped.getCause(), "Spark takes this for a stop");
        assertEquals(0, ResumeRanges.held());
    }

    @Test
    void aDriverThatNeverAnswersFailsTheQuery() {
        IllegalStateException failed = assertThrows(IllegalStateException.class,
            () -> ResumeRanges.await("run-silent", 100));
        assertTrue(failed.getMessage().contains("within 100 ms"), failed.getMessage());
    }

    @Test
    void laterBatchesOfTheSameStartTakeTheLedgerWithoutWaiting() {
        ResumeRanges.give("run-ledger", "t\t0\t5\t9\n");
        ResumeLedger first = ResumeLedger.given("flow-later", "run-ledger", 1000);
        ResumeLedger next = ResumeLedger.given("flow-later", "run-ledger", 1);
        assertSame(first, next, "nothing given for the second batch: it must not wait");
        assertArrayEquals(new long[] {5, 9}, next.left().get(A));
    }

    @Test
    void waitingWithoutAStartIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ResumeLedger.given("flow-x", "", 1000));
    }
}
