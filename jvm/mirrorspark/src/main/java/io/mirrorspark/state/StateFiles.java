package io.mirrorspark.state;

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;

/**
 * Small text files of a flow's state under a Hadoop-compatible URI (file://, hdfs://, s3a://...),
 * written the way Spark writes its own checkpoint: through {@link CheckpointFileManager}, so a file
 * is either absent or whole (atomic rename where the file system has it, a cancellable stream
 * otherwise). Python calls these from the driver over py4j.
 */
public final class StateFiles {

    private StateFiles() {
    }

    private static CheckpointFileManager manager(Path path, Configuration conf) {
        return CheckpointFileManager.create(path.getParent() == null ? path : path.getParent(), conf);
    }

    /** Replace {@code uri} with {@code text}, atomically. */
    public static void write(String uri, String text, Configuration conf) throws IOException {
        Path path = new Path(uri);
        CheckpointFileManager files = manager(path, conf);
        files.mkdirs(path.getParent());
        CancellableFSDataOutputStream out = files.createAtomic(path, true);
        try {
            out.write(text.getBytes(StandardCharsets.UTF_8));
            out.close();
        } catch (IOException | RuntimeException e) {
            out.cancel();
            throw e;
        }
    }

    /** The file's text, or null when it does not exist. */
    public static String read(String uri, Configuration conf) throws IOException {
        Path path = new Path(uri);
        CheckpointFileManager files = manager(path, conf);
        if (!files.exists(path)) {
            return null;
        }
        try (InputStream in = files.open(path)) {
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            in.transferTo(buffer);
            return buffer.toString(StandardCharsets.UTF_8);
        } catch (FileNotFoundException e) {
            return null;
        }
    }

    /** Names of the files directly in {@code uri} (not hidden, not temporary), sorted; empty if absent. */
    public static String list(String uri, Configuration conf) throws IOException {
        Path dir = new Path(uri);
        CheckpointFileManager files = CheckpointFileManager.create(dir, conf);
        if (!files.exists(dir)) {
            return "";
        }
        List<String> names = new ArrayList<>();
        for (FileStatus status : files.list(dir)) {
            String name = status.getPath().getName();
            if (!name.startsWith(".") && !name.endsWith(".tmp")) {
                names.add(name);
            }
        }
        Collections.sort(names);
        return String.join("\n", names);
    }

    public static void delete(String uri, Configuration conf) throws IOException {
        Path path = new Path(uri);
        manager(path, conf).delete(path);
    }

    /**
     * Resolve the file system of {@code uri}, create the folder and prove it writable with a probe
     * file; returns the fully qualified URI. Errors name the URI and say why.
     */
    public static String probe(String uri, Configuration conf) throws IOException {
        Path dir = new Path(uri);
        org.apache.hadoop.fs.FileSystem fs = dir.getFileSystem(conf);
        Path qualified = fs.makeQualified(dir);
        CheckpointFileManager files = CheckpointFileManager.create(qualified, conf);
        files.mkdirs(qualified);
        Path probe = new Path(qualified, ".write-probe");
        try (OutputStream out = files.createAtomic(probe, true)) {
            out.write('1');
        }
        files.delete(probe);
        return qualified.toString();
    }
}
