package io.mirrorspark.sink;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Active/active on the same topic names: the clusters a record has been in travel with it in one
 * header, so a flow never writes a record back into a cluster it came through.
 *
 * A flow {@code S->T} of a cycle that keeps names appends {@code S} to the record's
 * {@value #HEADER} header (a comma-separated list of cluster aliases; aliases hold no comma) and
 * skips a record whose list already names {@code T}. Records produced on a cluster carry no such
 * header, so on a target the header also tells this flow's copies from the target's own records.
 */
public final class Provenance {
    public static final String HEADER = "mirrorspark.path";

    private Provenance() {
    }

    /** The record's path header, or null when it has none (produced on the cluster it is read from). */
    static Header path(Headers headers) {
        return headers.lastHeader(HEADER);
    }

    /**
     * Marks {@code headers} for the hop {@code source->target}: false when the record has already
     * been in {@code target} (it is not written), else true with {@code source} appended.
     */
    static boolean mark(Headers headers, String source, String target) {
        Header path = path(headers);
        if (path == null) {
            headers.add(HEADER, source.getBytes(StandardCharsets.UTF_8));
            return true;
        }
        String seen = path.value() == null ? "" : new String(path.value(), StandardCharsets.UTF_8);
        if (contains(seen, target)) {
            return false;
        }
        headers.remove(HEADER);
        headers.add(HEADER, (seen.isEmpty() ? source : seen + "," + source).getBytes(StandardCharsets.UTF_8));
        return true;
    }

    static boolean contains(String path, String alias) {
        int from = 0;
        while (from <= path.length()) {
            int comma = path.indexOf(',', from);
            int end = comma < 0 ? path.length() : comma;
            if (path.regionMatches(from, alias, 0, alias.length()) && end - from == alias.length()) {
                return true;
            }
            if (comma < 0) {
                return false;
            }
            from = comma + 1;
        }
        return false;
    }
}
