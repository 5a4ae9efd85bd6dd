package io.mirrorspark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** The sample is the text Python parses: three TAB fields a line, a number last, every series there. */
final class JvmMetricsTest {

    @Test
    void everySeriesIsThereInTheFormatPythonReads() {
        Set<String> names = new HashSet<>();
        for (String line : JvmMetrics.sample().split("\n")) {
            String[] fields = line.split("\t", -1);
            assertEquals(3, fields.length, line);
            assertTrue(Double.parseDouble(fields[2]) >= 0 || fields[0].endsWith("_max_bytes"), line);
            names.add(fields[0]);
        }
        assertTrue(names.containsAll(Set.of("jvm_memory_used_bytes", "jvm_memory_max_bytes",
            "jvm_gc_collection_seconds_count", "jvm_gc_collection_seconds_sum", "jvm_threads_current")), names.toString());
    }
}
