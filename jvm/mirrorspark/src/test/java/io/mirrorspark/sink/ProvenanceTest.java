package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/**
 * Active/active on the same names without Kafka: a record produced on A gets path "A" on its way
 * to B, is skipped on its way back to A, travels a ring A->B->C as "A,B" and stops before A; other
 * headers keep their order; aliases are matched whole (B is not in "BB").
 */
final class ProvenanceTest {

    private static String path(RecordHeaders headers) {
        Header h = Provenance.path(headers);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    void aRecordTravelsEachClusterOnceAndNeverBackToItsOrigin() {
        RecordHeaders produced = new RecordHeaders();
        produced.add("seq", new byte[] {7});
        assertNull(Provenance.path(produced), "a record produced on a cluster has no path");
        assertTrue(Provenance.mark(produced, "A", "B"), "A->B copies a record produced on A");
        assertEquals("A", path(produced), "its path names A");
        assertEquals("seq", produced.toArray()[0].key(), "the record's own headers stay first");
        assertFalse(Provenance.mark(produced, "B", "A"), "B->A skips a record that came from A");
        assertEquals("A", path(produced), "a skipped record is left as it was");

        assertTrue(Provenance.mark(produced, "B", "C"), "B->C forwards it (it has never been in C)");
        assertEquals("A,B", path(produced), "the path grows by the cluster it leaves");
        assertEquals(2, produced.toArray().length, "one path header, replaced, not added");
        assertFalse(Provenance.mark(produced, "C", "A"), "C->A stops it: it started on A");
        assertFalse(Provenance.mark(produced, "C", "B"), "C->B stops it: it went through B");
    }

    @Test
    void aliasesAreMatchedWhole() {
        RecordHeaders similar = new RecordHeaders();
        similar.add(Provenance.HEADER, "BB,AB".getBytes(StandardCharsets.UTF_8));
        assertTrue(Provenance.mark(similar, "C", "B"), "aliases match whole: B is not BB nor AB");
        assertEquals("BB,AB,C", path(similar), "appended after the others");
        assertTrue(Provenance.contains("x,y", "y"), "last");
        assertTrue(Provenance.contains("x,y", "x"), "first");
        assertFalse(Provenance.contains("", "x"), "empty");
    }
}
