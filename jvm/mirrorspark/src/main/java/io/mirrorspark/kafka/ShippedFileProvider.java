package io.mirrorspark.kafka;

import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.provider.ConfigProvider;
import org.apache.spark.SparkFiles;

/**
 * Kafka config provider for files that sit on the driver's disk (truststores, keystores).
 *
 * mirrorspark ships such a file with {@code spark.files} and writes the client setting as
 * {@code ${mirrorspark-file:DIR:NAME}}. Each Kafka client resolves it where it is created: on the
 * driver the original {@code DIR/NAME} exists; on an executor of another machine the shipped copy
 * in Spark's files folder is used. Neither there: the client fails with a message naming the file.
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
        if (original.isFile()) {
            return original.getPath();
        }
        String shipped = null;
        try {
            shipped = SparkFiles.get(name);
        } catch (RuntimeException | LinkageError e) {
            // no SparkEnv here (not inside Spark): only the original path can exist
        }
        if (shipped != null && new File(shipped).isFile()) {
            return shipped;
        }
        throw new ConfigException("mirrorspark: " + original.getPath() + " is not on this machine and was not shipped "
            + "to this executor (spark.files, added by mirrorspark for every *.location client setting): "
            + "check that the driver can read it");
    }

    @Override
    public void close() {
    }
}
