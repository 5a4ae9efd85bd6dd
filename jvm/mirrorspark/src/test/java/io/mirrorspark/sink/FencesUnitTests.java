package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

import io.mirrorspark.UnitChecks;

/**
 * The write fence without Spark: a flow with no deadline in this JVM is not fenced, a renewed one
 * writes until its deadline, an expired or revoked one is refused with a message naming the flow.
 * Run by tests/unit/test_jvm_units.py.
 */
public final class FencesUnitTests {
    private FencesUnitTests() {
    }

    private static String refusal(String flow) {
        try {
            Fences.check(flow, Fences.of(flow));
            return null;
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    public static void main(String[] args) {
        check(Fences.of("a->b") == null, "no deadline before any renewal");
        check(refusal("a->b") == null, "a flow without a lease here is not fenced");

        Fences.renew("a->b", System.currentTimeMillis() + 60_000);
        AtomicLong held = Fences.of("a->b");
        check(refusal("a->b") == null, "a confirmed lease writes");

        Fences.renew("a->b", System.currentTimeMillis() - 1_500);
        String late = refusal("a->b");
        check(late != null && late.contains("flow a->b: fenced") && late.contains("expired"),
            "an expired deadline refuses: " + late);
        check(Fences.of("a->b") == held, "a writer built before the renewal sees the new deadline");

        Fences.revoke("a->b");
        String revoked = refusal("a->b");
        check(revoked != null && !revoked.contains("expired"), "a revoked lease refuses: " + revoked);
        check(refusal("c->d") == null, "other flows are not touched");

        Fences.forget("a->b");
        check(refusal("a->b") == null, "a forgotten flow is no longer fenced");

        // Late acknowledgements: records handed to the producer before a pause, acknowledged after.
        check(Fences.expired(Fences.of("e->f")) == false, "no deadline: never expired");
        Fences.renew("e->f", System.currentTimeMillis() - 1);
        check(Fences.expired(Fences.of("e->f")), "a passed deadline is expired");
        Fences.acknowledged("e->f", "t", 0, 41L);  // an earlier task's last in-time offset
        Fences.late("e->f", "t", 0, 45L, 43L);     // this task had 43 in time
        Fences.late("e->f", "t", 0, 46L, 43L);
        Fences.late("e->f", "t", 1, 7L, -1L);      // nothing of partition 1 known in time
        String json = Fences.lateWrites("e->f", 1_000);
        check(json.startsWith("{\"flushed\":true,\"partitions\":["), json);
        check(json.contains("{\"topic\":\"t\",\"partition\":0,\"from\":44,\"dropped\":0,\"offsets\":[45,46]}"),
            "partition 0: scanned from the first offset after those acknowledged in time: " + json);
        check(json.contains("{\"topic\":\"t\",\"partition\":1,\"from\":-1,\"dropped\":0,\"offsets\":[7]}"),
            "partition 1: start unknown: " + json);
        check(Fences.lateWrites("e->f", 1_000).equals("{\"flushed\":true,\"partitions\":[]}"),
            "the list is cleared once read");
        for (int i = 0; i < Fences.KEPT + 5; i++) {
            Fences.late("e->f", "t", 2, i, -1L);
        }
        check(Fences.lateWrites("e->f", 1_000).contains("\"dropped\":5,"), "beyond the kept ones, counted only");
        UnitChecks.done();
    }
}
