package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * The write fence without Spark: a flow with no deadline in this JVM is not fenced, a renewed one
 * writes until its deadline, an expired or revoked one is refused with a message naming the flow;
 * acknowledgements that arrive after the deadline are listed for the driver.
 */
final class FencesTest {

    private static String refusal(String flow) {
        try {
            Fences.check(flow, Fences.of(flow));
            return null;
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    @Test
    void aLeaseFencesItsFlowUntilItsDeadline() {
        assertNull(Fences.of("a->b"), "no deadline before any renewal");
        assertNull(refusal("a->b"), "a flow without a lease here is not fenced");

        Fences.renew("a->b", System.currentTimeMillis() + 60_000);
        AtomicLong held = Fences.of("a->b");
        assertNull(refusal("a->b"), "a confirmed lease writes");

        Fences.renew("a->b", System.currentTimeMillis() - 1_500);
        String late = refusal("a->b");
        assertNotNull(late, "an expired deadline refuses");
        assertTrue(late.contains("flow a->b: fenced") && late.contains("expired"), "an expired deadline refuses: " + late);
        assertSame(held, Fences.of("a->b"), "a writer built before the renewal sees the new deadline");

        Fences.revoke("a->b");
        String revoked = refusal("a->b");
        assertNotNull(revoked, "a revoked lease refuses");
        assertFalse(revoked.contains("expired"), "a revoked lease refuses: " + revoked);
        assertNull(refusal("c->d"), "other flows are not touched");

        Fences.forget("a->b");
        assertNull(refusal("a->b"), "a forgotten flow is no longer fenced");
    }

    /** Late acknowledgements: records handed to the producer before a pause, acknowledged after. */
    @Test
    void lateAcknowledgementsAreListedOnce() {
        assertFalse(Fences.expired(Fences.of("e->f")), "no deadline: never expired");
        Fences.renew("e->f", System.currentTimeMillis() - 1);
        assertTrue(Fences.expired(Fences.of("e->f")), "a passed deadline is expired");
        Fences.acknowledged("e->f", "t", 0, 41L);  // an earlier task's last in-time offset
        Fences.late("e->f", "t", 0, 45L, 43L, 1_001L);  // this task had 43 in time; copies of 1,001
        Fences.late("e->f", "t", 0, 46L, 43L, 1_000L);  // and 1,000 (acknowledged out of order)
        Fences.late("e->f", "t", 1, 7L, -1L, -1L);      // nothing of partition 1 known in time, nor its source
        String json = Fences.lateWrites("e->f", 1_000);
        assertTrue(json.startsWith("{\"flushed\":true,\"partitions\":["), json);
        assertTrue(json.contains("{\"topic\":\"t\",\"partition\":0,\"from\":44,\"dropped\":0,\"upstream\":1002,"
            + "\"offsets\":[45,46]}"),
            "partition 0: scanned from the first offset after those acknowledged in time, a new writer's copies "
            + "past source offset 1,001 end the search: " + json);
        assertTrue(json.contains("{\"topic\":\"t\",\"partition\":1,\"from\":-1,\"dropped\":0,\"upstream\":-1,"
            + "\"offsets\":[7]}"),
            "partition 1: start unknown: " + json);
        assertEquals("{\"flushed\":true,\"partitions\":[]}", Fences.lateWrites("e->f", 1_000),
            "the list is cleared once read");
        for (int i = 0; i < Fences.KEPT + 5; i++) {
            Fences.late("e->f", "t", 2, i, -1L, i);
        }
        assertTrue(Fences.lateWrites("e->f", 1_000).contains("\"dropped\":5,"), "beyond the kept ones, counted only");
    }
}
