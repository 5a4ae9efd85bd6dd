package io.mirrorspark.sink;

import static io.mirrorspark.UnitChecks.check;

import java.nio.charset.StandardCharsets;

import io.mirrorspark.UnitChecks;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Active/active on the same names without Kafka: a record produced on A gets path "A" on its way
 * to B, is skipped on its way back to A, travels a ring A->B->C as "A,B" and stops before A; other
 * headers keep their order; aliases are matched whole (B is not in "BB"). Run by tests/unit/test_jvm_units.py.
 */
public final class ProvenanceUnitTests {
    private ProvenanceUnitTests() {
    }

    private static String path(RecordHeaders headers) {
        Header h = Provenance.path(headers);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) {
        RecordHeaders produced = new RecordHeaders();
        produced.add("seq", new byte[] {7});
        check(Provenance.path(produced) == null, "a record produced on a cluster has no path");
        check(Provenance.mark(produced, "A", "B"), "A->B copies a record produced on A");
        check("A".equals(path(produced)), "its path names A");
        check("seq".equals(produced.toArray()[0].key()), "the record's own headers stay first");
        check(!Provenance.mark(produced, "B", "A"), "B->A skips a record that came from A");
        check("A".equals(path(produced)), "a skipped record is left as it was");

        check(Provenance.mark(produced, "B", "C"), "B->C forwards it (it has never been in C)");
        check("A,B".equals(path(produced)), "the path grows by the cluster it leaves");
        check(produced.toArray().length == 2, "one path header, replaced, not added");
        check(!Provenance.mark(produced, "C", "A"), "C->A stops it: it started on A");
        check(!Provenance.mark(produced, "C", "B"), "C->B stops it: it went through B");

        RecordHeaders similar = new RecordHeaders();
        similar.add(Provenance.HEADER, "BB,AB".getBytes(StandardCharsets.UTF_8));
        check(Provenance.mark(similar, "C", "B"), "aliases match whole: B is not BB nor AB");
        check("BB,AB,C".equals(path(similar)), "appended after the others");
        check(Provenance.contains("x,y", "y") && Provenance.contains("x,y", "x") && !Provenance.contains("", "x"),
            "first, last and empty");
        UnitChecks.done();
    }
}
