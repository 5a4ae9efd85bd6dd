package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** What an executor of its own reads from a lease confirmation: its instance's deadline, or none. */
final class LeaseWatchTest {

    @Test
    void theWritingInstancesDeadlineIsTheOneCommitted() {
        assertEquals(1_700_000_005_000L, LeaseWatch.deadline("4f2a 1700000005000", "4f2a"));
        assertEquals(1_700_000_005_000L, LeaseWatch.deadline(" 4f2a 1700000005000\n", "4f2a"));
    }

    @Test
    void anotherInstancesCommitOrNothingReadableIsNoDeadline() {
        assertEquals(0L, LeaseWatch.deadline("b7c1 1700000005000", "4f2a"), "the lease moved: fenced");
        assertEquals(0L, LeaseWatch.deadline(null, "4f2a"), "no confirmation yet");
        assertEquals(0L, LeaseWatch.deadline("", "4f2a"));
        assertEquals(0L, LeaseWatch.deadline("4f2a", "4f2a"));
        assertEquals(0L, LeaseWatch.deadline("4f2a soon", "4f2a"));
        assertEquals(0L, LeaseWatch.deadline("4f2a 1 2", "4f2a"));
    }
}
