package io.mirrorspark.metrics;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.lang.management.OperatingSystemMXBean;

/**
 * The driver JVM's memory, collections, threads and CPU time (and the free buffer memory of the sink's
 * producers in it, which in local mode are all of them), read in one py4j call as text so the
 * Python side samples them off the scrape path (a scrape never waits on the JVM). Lines are
 * {@code name TAB label=value TAB value}; the names are the JVM series Prometheus' Java clients
 * export (and Strimzi's MM2 dashboard reads).
 */
public final class JvmMetrics {

    private JvmMetrics() {
    }

    private static void line(StringBuilder out, String name, String label, double value) {
        out.append(name).append('\t').append(label).append('\t').append(value).append('\n');
    }

    /** One sample of every series. */
    public static String sample() {
        StringBuilder out = new StringBuilder();
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        MemoryUsage nonHeap = ManagementFactory.getMemoryMXBean().getNonHeapMemoryUsage();
        line(out, "jvm_memory_used_bytes", "area=heap", heap.getUsed());
        line(out, "jvm_memory_used_bytes", "area=nonheap", nonHeap.getUsed());
        line(out, "jvm_memory_max_bytes", "area=heap", heap.getMax());
        line(out, "jvm_memory_max_bytes", "area=nonheap", nonHeap.getMax());
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            String label = "gc=" + gc.getName().replace('\t', ' ');
            line(out, "jvm_gc_collection_seconds_count", label, Math.max(0, gc.getCollectionCount()));
            line(out, "jvm_gc_collection_seconds_sum", label, Math.max(0, gc.getCollectionTime()) / 1000.0);
        }
        line(out, "jvm_threads_current", "", ManagementFactory.getThreadMXBean().getThreadCount());
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            long nanos = ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
            if (nanos >= 0) {
                line(out, "jvm_process_cpu_seconds_total", "", nanos / 1e9);
            }
        }
        for (String flow : io.mirrorspark.sink.ProducerFigures.bufferAvailable().split("\n")) {
            int tab = flow.indexOf('\t');
            if (tab > 0) {
                line(out, "kafka_producer_buffer_available_bytes", "flow=" + flow.substring(0, tab),
                    Double.parseDouble(flow.substring(tab + 1)));
            }
        }
        return out.toString();
    }
}
