package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mirrorspark.kafka.OffsetRunList;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once progress without Kafka: the pairs of a transaction survive the offset metadata
 * round trip, a source offset below {@code next} counts as committed and maps to its target offset,
 * too many pairs keep the newest and say so, and foreign or damaged metadata gives no pairs (never
 * wrong ones).
 */
final class ProgressTest {

    @Test
    void pairsRoundTripAndMapBelowNext() {
        OffsetRunList runs = OffsetRunList.of(100, 5_000, 50, 152, 5_051, 10);  // a gap at 150-151 (an aborted source transaction)
        String meta = Progress.encode(runs);
        assertTrue(meta.length() <= Progress.MAX_METADATA, "metadata fits");
        Progress p = Progress.decode(162, meta);
        assertFalse(p.partial, "every pair kept");
        assertTrue(p.committed(161), "committed means below next");
        assertFalse(p.committed(162), "committed means below next");
        assertEquals(5_000, p.downstream(100), "first run maps");
        assertEquals(5_049, p.downstream(149), "first run maps");
        assertEquals(5_051, p.downstream(152), "second run maps after the target marker");
        assertEquals(5_060, p.downstream(161), "second run maps after the target marker");
        assertEquals(-1, p.downstream(150), "a gap has no pair");
        assertEquals(-1, p.downstream(99), "an older offset has no pair");
    }

    @Test
    void tooManyPairsKeepTheNewestAndSaySo() {
        OffsetRunList many = new OffsetRunList();
        for (int i = 0; i < 1_000; i++) {
            many.add(2L * i, 3L * i, 1);
        }
        String big = Progress.encode(many);
        assertTrue(big.length() <= Progress.MAX_METADATA, "too many pairs still fit: " + big.length());
        Progress q = Progress.decode(2_000, big);
        assertTrue(q.partial, "dropped pairs are said");
        assertEquals(2_997, q.downstream(1_998), "the newest pair is kept");
        assertEquals(-1, q.downstream(0), "the oldest is dropped");
    }

    @Test
    void missingOrDamagedMetadataGivesNoPairs() {
        assertEquals(-1, Progress.decode(10, null).downstream(5), "an offset without metadata has no pair");
        assertTrue(Progress.decode(10, null).committed(5), "an offset without metadata still says what is committed");
        assertEquals(-1, Progress.decode(10, "ms1;1:x:3").downstream(1), "damaged metadata gives no pair");
        assertEquals(-1, Progress.decode(10, "ms1;").downstream(1), "an empty transaction's metadata: no pair");
        assertFalse(Progress.decode(10, "ms1;").partial, "an empty transaction's metadata: not partial");
        assertFalse(Progress.NONE.committed(0), "no progress: nothing committed");
    }
}
