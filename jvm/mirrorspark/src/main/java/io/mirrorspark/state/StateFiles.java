package io.mirrorspark.state;

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

/**
 * Small text files of a flow's state under a Hadoop-compatible URI (file://, hdfs://, s3a://...).
 * A file is written to a temporary name and renamed over the old one, so a reader (or a driver
 * restarted after kill -9) sees the previous version or the new one, never a part. Python calls
 * these from the driver over py4j.
 */
public final class StateFiles {

    private StateFiles() {
    }

    /**
     * The file system of {@code path}, without checksum wrappers: a local checksum file system
     * renames a file and its {@code .crc} in two steps, so a kill -9 between them leaves a file
     * that no longer matches its checksum and cannot be read. State files are replaced whole by
     * one rename; a torn one is impossible without the wrapper.
     */
    private static FileSystem fileSystem(Path path, Configuration conf) throws IOException {
        FileSystem fs = path.getFileSystem(conf);
        while (fs instanceof FilterFileSystem) {
            fs = ((FilterFileSystem) fs).getRawFileSystem();
        }
        return fs;
    }

    /** Replace {@code uri} with {@code text}. */
    public static void write(String uri, String text, Configuration conf) throws IOException {
        Path path = new Path(uri);
        FileSystem fs = fileSystem(path, conf);
        fs.mkdirs(path.getParent());
        Path tmp = new Path(path.getParent(), "." + path.getName() + "." + UUID.randomUUID() + ".tmp");
        try {
            try (FSDataOutputStream out = fs.create(tmp, true)) {
                out.write(text.getBytes(StandardCharsets.UTF_8));
            }
            if (!fs.rename(tmp, path)) {
                // HDFS (and others) refuse to rename onto an existing file; FileContext's
                // OVERWRITE rename replaces it atomically there.
                FileContext.getFileContext(path.toUri(), conf).rename(tmp, path, Options.Rename.OVERWRITE);
            }
        } finally {
            if (fs.exists(tmp)) {
                fs.delete(tmp, false);
            }
        }
    }

    /** The file's text, or null when it does not exist. */
    public static String read(String uri, Configuration conf) throws IOException {
        Path path = new Path(uri);
        FileSystem fs = fileSystem(path, conf);
        try (InputStream in = fs.open(path)) {
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
        FileSystem fs = fileSystem(dir, conf);
        List<String> names = new ArrayList<>();
        FileStatus[] found;
        try {
            found = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return "";
        }
        for (FileStatus status : found) {
            String name = status.getPath().getName();
            if (status.isFile() && !name.startsWith(".") && !name.endsWith(".tmp")) {
                names.add(name);
            }
        }
        Collections.sort(names);
        return String.join("\n", names);
    }

    public static void delete(String uri, Configuration conf) throws IOException {
        Path path = new Path(uri);
        fileSystem(path, conf).delete(path, false);
    }

    /** Move the file or folder {@code from} to {@code to} (same file system); false when {@code from} is absent. */
    public static boolean rename(String from, String to, Configuration conf) throws IOException {
        Path source = new Path(from);
        FileSystem fs = fileSystem(source, conf);
        if (!fs.exists(source)) {
            return false;
        }
        if (!fs.rename(source, new Path(to))) {
            throw new IOException("cannot move " + from + " to " + to);
        }
        return true;
    }

    /**
     * Resolve the file system of {@code uri}, create the folder and prove it writable with a probe
     * file; returns the fully qualified URI. Errors name the URI and say why.
     */
    public static String probe(String uri, Configuration conf) throws IOException {
        Path dir = new Path(uri);
        FileSystem fs = fileSystem(dir, conf);
        Path qualified = fs.makeQualified(dir);
        if (!fs.mkdirs(qualified)) {
            throw new IOException("cannot create the folder " + qualified);
        }
        write(new Path(qualified, ".write-probe").toString(), "1", conf);
        fs.delete(new Path(qualified, ".write-probe"), false);
        return qualified.toString();
    }
}
