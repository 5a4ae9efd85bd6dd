package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * Producers kept by an executor JVM are closed when no longer used, without Kafka (issue 42, finding 9):
 * at least once, a flow asking for other settings (a larger max.request.size) moves to a new producer
 * and the old one is closed once no flow uses it, and one no task used for a while is closed; exactly
 * once, a kept transactional producer serves only tasks with its own settings and is closed when idle.
 */
final class ProducerPoolsTest {

    /** A producer standing in for Kafka's: made from its settings, closed once. */
    private static final class Fake {
        final Map<String, String> settings;
        int closed;

        Fake(Map<String, String> settings) {
            this.settings = settings;
        }
    }

    private static Map<String, String> settings(String maxRequest) {
        Map<String, String> s = new HashMap<>();
        s.put("bootstrap.servers", "target:9092");
        s.put("max.request.size", maxRequest);
        return s;
    }

    @Test
    void aFencedFlowsProducersAreAbortedSharedOnesTooAndAnotherFlowsAreKept() {
        List<Fake> aborted = new ArrayList<>();
        Producers.Pool<Fake> pool = new Producers.Pool<>(Fake::new, f -> f.closed++, aborted::add);
        long t = 1_000_000L;
        Fake own = pool.acquire("x->b", settings("2097152"), t);  // a task is still writing with it
        Fake shared = pool.acquire("x->c", settings("1048576"), t);
        assertSame(shared, pool.acquire("y->c", settings("1048576"), t));
        Fake other = pool.acquire("z->b", settings("3145728"), t);

        assertEquals(0, pool.abort("q->b"), "a flow without producers here");
        assertEquals(1, pool.abort("x->b"));
        assertEquals(List.of(own), aborted, "closed without sending what it holds, though a task uses it");
        assertEquals(1, pool.abort("y->c"), "shared with x->c: its tasks fail and their retries compare");
        assertEquals(List.of(own, shared), aborted);
        assertEquals(0, own.closed + shared.closed + other.closed, "nothing closed the gentle way");
        assertEquals(List.of(other), pool.all());
        pool.release(settings("2097152"), own, false, t);  // the task ends (its sends failed)
        assertEquals(0, own.closed, "an aborted producer is not closed again");
        assertNotSame(own, pool.acquire("x->b", settings("2097152"), t + 1), "a later task gets a new producer");
    }

    @Test
    void producersAreListedPerFlowThatUsesThemForTheMetrics() {
        Producers.Pool<Fake> pool = new Producers.Pool<>(Fake::new, f -> f.closed++);
        long t = 1_000_000L;
        Fake shared = pool.acquire("x->c", settings("1048576"), t);
        pool.acquire("y->c", settings("1048576"), t);
        Fake own = pool.acquire("x->b", settings("2097152"), t);
        Map<String, List<Fake>> byFlow = pool.byFlow();
        assertEquals(2, byFlow.get("x->c").size() + byFlow.get("y->c").size());
        assertSame(shared, byFlow.get("y->c").get(0), "a shared producer counts for each flow");
        assertEquals(List.of(own), byFlow.get("x->b"));
        assertFalse(byFlow.containsKey("z->b"));
    }

    @Test
    void aPooledProducerIsClosedOnceNoFlowOrTaskUsesIt() {
        List<Fake> made = new ArrayList<>();
        Producers.Pool<Fake> pool = new Producers.Pool<>(s -> {
            Fake f = new Fake(s);
            made.add(f);
            return f;
        }, f -> f.closed++);
        long t = 1_000_000L;

        // One flow, its max.request.size grown between batches: one producer open, the old one closed.
        Fake small = pool.acquire("a->b", settings("1048576"), t);
        assertSame(small, pool.acquire("a->b", settings("1048576"), t), "the same settings share one producer");
        pool.release(settings("1048576"), small, false, t);
        pool.release(settings("1048576"), small, false, t);
        Fake large = pool.acquire("a->b", settings("4210688"), t + 1);
        assertNotSame(small, large, "the old size's producer is closed");
        assertEquals(1, small.closed, "the old size's producer is closed");
        assertEquals(1, pool.all().size(), "the old size's producer is closed");

        // Two flows sharing a producer: it stays while one of them still asks for its settings.
        Fake shared = pool.acquire("c->b", settings("4210688"), t + 2);
        assertSame(large, shared, "flows with the same settings share it");
        pool.release(settings("4210688"), large, false, t + 2);
        pool.release(settings("4210688"), shared, false, t + 2);
        Fake bigger = pool.acquire("a->b", settings("8388608"), t + 3);
        assertEquals(0, large.closed, "still asked for by the other flow");
        Fake again = pool.acquire("c->b", settings("8388608"), t + 3);
        assertSame(bigger, again, "closed once no flow asks for its settings");
        assertEquals(1, large.closed, "closed once no flow asks for its settings");

        // Moved on while a task still writes with it: closed at that task's release, not before.
        Fake busy = pool.acquire("e->b", settings("1"), t + 4);
        Fake moved = pool.acquire("e->b", settings("2"), t + 4);
        assertEquals(0, busy.closed, "in use: not closed yet");
        assertNotSame(busy, moved, "in use: not closed yet");
        pool.release(settings("1"), busy, false, t + 5);
        assertEquals(1, busy.closed, "closed at its last release");

        // A failed send retires it as before.
        pool.release(settings("2"), moved, true, t + 5);
        assertEquals(1, moved.closed, "a failed producer nobody else uses is closed");

        // Idle: nothing used it for IDLE_MS (its flows stopped); checked at a later acquire.
        pool.release(settings("8388608"), bigger, false, t + 6);
        pool.release(settings("8388608"), again, false, t + 6);
        Fake other = pool.acquire("x->y", settings("9"), t + 6 + Producers.IDLE_MS - 1);
        assertEquals(0, bigger.closed, "not idle long enough");
        pool.acquire("x->y", settings("9"), t + 6 + Producers.IDLE_MS + Producers.SWEEP_EVERY_MS);
        assertEquals(1, bigger.closed, "idle: closed");
        assertEquals(0, other.closed, "one in use: kept");
        int open = 0;
        for (Fake f : made) {
            open += f.closed == 0 ? 1 : 0;
            assertTrue(f.closed <= 1, "closed once");
        }
        assertEquals(1, open, "only the producer in use is open: " + open);
        assertEquals(open, pool.all().size(), "only the producer in use is open: " + open);
    }

    /** Exactly once: a kept producer serves only its own settings, and idle ones are taken out. */
    @Test
    void aKeptTransactionalProducerServesItsOwnSettingsUntilIdle() {
        long t = 1_000_000L;
        Transactions.Entry kept = new Transactions.Entry("p-0", null, settings("1048576"));
        assertTrue(Transactions.reusable(kept, settings("1048576")), "the same settings: reused");
        assertFalse(Transactions.reusable(kept, settings("4210688")), "a larger max.request.size: replaced");
        kept.inUse = true;
        assertFalse(Transactions.reusable(kept, settings("1048576")), "held by another task: not reused");
        Map<String, Transactions.Entry> entries = new HashMap<>();
        Transactions.Entry quiet = new Transactions.Entry("p-1", null, Map.of());
        quiet.usedAt = t;
        kept.usedAt = t;
        Transactions.Entry recent = new Transactions.Entry("p-2", null, Map.of());
        recent.usedAt = t + Transactions.IDLE_MS;
        entries.put("0", kept);
        entries.put("1", quiet);
        entries.put("2", recent);
        List<Transactions.Entry> idle = Transactions.takeIdle(entries, t + Transactions.IDLE_MS, Transactions.IDLE_MS);
        String what = "a task not run for IDLE_MS gives its producer up; one in use or recent is kept";
        assertEquals(1, idle.size(), what);
        assertSame(quiet, idle.get(0), what);
        assertEquals(2, entries.size(), what);
        assertFalse(entries.containsValue(quiet), what);
    }
}
