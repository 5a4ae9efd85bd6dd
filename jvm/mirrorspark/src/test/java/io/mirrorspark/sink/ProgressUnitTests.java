package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import io.mirrorspark.UnitChecks;

/**
 * Exactly-once progress without Kafka: the pairs of a transaction survive the offset metadata
 * round trip, a source offset below {@code next} counts as committed and maps to its target offset,
 * too many pairs keep the newest and say so, and foreign or damaged metadata gives no pairs (never
 * wrong ones). Run by tests/unit/test_jvm_units.py.
 */
public final class ProgressUnitTests {
    private ProgressUnitTests() {
    }

    public static void main(String[] args) {
        long[] runs = {100, 5_000, 50, 152, 5_051, 10};  // a gap at 150-151 (an aborted source transaction)
        String meta = Progress.encode(runs);
        check(meta.length() <= Progress.MAX_METADATA, "metadata fits");
        Progress p = Progress.decode(162, meta);
        check(!p.partial, "every pair kept");
        check(p.committed(161) && !p.committed(162), "committed means below next");
        check(p.downstream(100) == 5_000 && p.downstream(149) == 5_049, "first run maps");
        check(p.downstream(152) == 5_051 && p.downstream(161) == 5_060, "second run maps after the target marker");
        check(p.downstream(150) == -1 && p.downstream(99) == -1, "a gap or an older offset has no pair");

        long[] many = new long[3 * 1_000];
        for (int i = 0; i < 1_000; i++) {
            many[3 * i] = 2L * i;
            many[3 * i + 1] = 3L * i;
            many[3 * i + 2] = 1;
        }
        String big = Progress.encode(many);
        check(big.length() <= Progress.MAX_METADATA, "too many pairs still fit: " + big.length());
        Progress q = Progress.decode(2_000, big);
        check(q.partial, "dropped pairs are said");
        check(q.downstream(1_998) == 2_997, "the newest pair is kept");
        check(q.downstream(0) == -1, "the oldest is dropped");

        check(Progress.decode(10, null).downstream(5) == -1 && Progress.decode(10, null).committed(5),
            "an offset without metadata still says what is committed");
        check(Progress.decode(10, "ms1;1:x:3").downstream(1) == -1, "damaged metadata gives no pair");
        check(Progress.decode(10, "ms1;").downstream(1) == -1 && !Progress.decode(10, "ms1;").partial,
            "an empty transaction's metadata");
        check(!Progress.NONE.committed(0), "no progress: nothing committed");
        UnitChecks.done();
    }
}
