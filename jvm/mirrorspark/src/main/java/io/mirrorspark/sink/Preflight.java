package io.mirrorspark.sink;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function;

/**
 * A small job run before any query starts: each task reports its executor and whatever it lacks
 * (the Kafka connector, the Kafka client, a shipped file). An executor that cannot load this very
 * class fails the job with ClassNotFoundException, which the driver reports as a missing jar.
 */
public final class Preflight {
    private static final String[] CLASSES = {
        "org.apache.spark.sql.kafka010.KafkaSourceProvider: the Spark Kafka connector (spark-sql-kafka-0-10)",
        "org.apache.kafka.clients.producer.KafkaProducer: the Kafka client (kafka-clients)",
        "org.apache.commons.pool2.impl.GenericKeyedObjectPool: commons-pool2 (needed by the connector)",
    };

    private Preflight() {
    }

    /** Lines {@code executor TAB problems} (problems empty when all is there), one per executor. */
    public static String check(JavaSparkContext jsc, String fileNames) {
        int tasks = Math.max(2, jsc.sc().defaultParallelism()) * 2;
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            seeds.add(i);
        }
        TreeSet<String> lines = new TreeSet<>(jsc.parallelize(seeds, tasks).map(new Probe(fileNames)).collect());
        return String.join("\n", lines);
    }

    private static final class Probe implements Function<Integer, String> {
        private static final long serialVersionUID = 1L;
        private final String fileNames;

        Probe(String fileNames) {
            this.fileNames = fileNames;
        }

        @Override
        public String call(Integer ignored) {
            List<String> missing = new ArrayList<>();
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            for (String entry : CLASSES) {
                String name = entry.substring(0, entry.indexOf(':'));
                try {
                    Class.forName(name, false, loader);
                } catch (ClassNotFoundException | LinkageError e) {
                    missing.add("cannot load " + entry.substring(entry.indexOf(':') + 2) + " (spark.jars)");
                }
            }
            for (String file : fileNames.split("\n")) {
                if (!file.isEmpty() && !new File(SparkFiles.get(file)).isFile()) {
                    missing.add("shipped file " + file + " is missing (spark.files)");
                }
            }
            SparkEnv env = SparkEnv.get();
            return (env == null ? "unknown" : env.executorId()) + "\t" + String.join("; ", missing);
        }
    }
}
