package com.example.mm2;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsContext;
import org.apache.kafka.common.metrics.MetricsReporter;

/**
 * A test metrics reporter as MM2 users plug them in: each client that loads it appends a line naming
 * its kind (Kafka's metrics namespace: kafka.consumer, kafka.producer, kafka.admin.client) to the file
 * that MIRRORSPARK_TEST_REPORTER_FILE names.
 */
public class FileReporter implements MetricsReporter {
    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void contextChange(MetricsContext context) {
        String kind = context.contextLabels().get(MetricsContext.NAMESPACE);
        String path = System.getenv("MIRRORSPARK_TEST_REPORTER_FILE");
        if (path == null || kind == null) {
            return;
        }
        synchronized (FileReporter.class) {
            try {
                Files.write(Paths.get(path), (kind + "\n").getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }
}
