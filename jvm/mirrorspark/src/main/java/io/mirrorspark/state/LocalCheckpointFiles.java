package io.mirrorspark.state;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;

/**
 * Spark's FileSystem-based checkpoint file manager, writing its temporary files on a local (file:)
 * checkpoint with plain Java I/O. Hadoop's local file system sets each new file's mode by forking
 * {@code chmod} when its native library is absent (it is, in pyspark), and writes a {@code .crc} file
 * beside it: four processes per batch for the offset and commit logs, 20-30 ms of every batch
 * (JFR, docs/adr/0010-grouped-source.md). Renames stay Hadoop's (atomic on a local file system,
 * and they drop a stale {@code .crc} of the destination); other schemes are Spark's as they were.
 */
public class LocalCheckpointFiles extends FileSystemBasedCheckpointFileManager {

    public LocalCheckpointFiles(Path path, Configuration hadoopConf) {
        super(path, hadoopConf);
    }

    @Override
    public FSDataOutputStream createTempFile(Path path) {
        if (!"file".equals(fs().getUri().getScheme())) {
            return super.createTempFile(path);
        }
        java.nio.file.Path file = Paths.get(fs().makeQualified(path).toUri());
        try {
            OutputStream out = Files.newOutputStream(file, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
            return new FSDataOutputStream(out, null);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("cannot create " + file, e);
        }
    }
}
