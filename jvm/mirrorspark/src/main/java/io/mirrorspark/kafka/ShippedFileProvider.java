package io.mirrorspark.kafka;

import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.provider.ConfigProvider;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;

/**
 * Kafka config provider for files that sit on the driver's disk (truststores, keystores).
 *
 * mirrorspark ships such a file with {@code spark.files} and writes the client setting as
 * {@code ${mirrorspark-file:DIR:NAME}}. Each Kafka client resolves it where it is created: on the
 * driver the original {@code DIR/NAME}; on an executor the shipped copy in Spark's files folder,
 * whatever the executor's machine has at the driver's path. Missing: the client fails with a
 * message naming the file.
 */
public final class ShippedFileProvider implements ConfigProvider {
    public static final String NAME = "mirrorspark-file";

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public ConfigData get(String path) {
        return new ConfigData(new HashMap<>());
    }

    @Override
    public ConfigData get(String path, Set<String> keys) {
        Map<String, String> resolved = new HashMap<>();
        for (String name : keys) {
            resolved.put(name, locate(path, name));
        }
        return new ConfigData(resolved);
    }

    static String locate(String dir, String name) {
        File original = dir == null ? new File(name) : new File(dir, name);
        boolean executor = false;
        try {
            SparkEnv env = SparkEnv.get();
            executor = env != null && !"driver".equals(env.executorId());
        } catch (LinkageError e) {
            // not inside Spark: only the original path can exist
        }
        if (executor) {
            // Executors use what the driver shipped, even where the driver's path happens to exist.
            File shipped = new File(SparkFiles.get(name));
            if (shipped.isFile()) {
                return shipped.getPath();
            }
        } else if (original.isFile()) {
            return original.getPath();
        }
        throw new ConfigException("mirrorspark: " + (executor ? "this executor did not receive " + name
            + " (shipped with spark.files from the driver's " + original.getPath() + ")"
            : original.getPath() + " does not exist on the driver"));
    }

    @Override
    public void close() {
    }
}
