package io.mirrorspark.sink;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The write fence without Spark: a flow with no deadline in this JVM is not fenced, a renewed one
 * writes until its deadline, an expired or revoked one is refused with a message naming the flow.
 * Run by tests/unit/test_jvm_units.py.
 */
public final class FencesUnitTests {
    private static int checks;

    private FencesUnitTests() {
    }

    private static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            throw new AssertionError(what);
        }
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
        System.out.println("ok: " + checks + " checks");
    }
}
