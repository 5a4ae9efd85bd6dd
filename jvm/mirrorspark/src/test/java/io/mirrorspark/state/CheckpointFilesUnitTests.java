package io.mirrorspark.state;

import static io.mirrorspark.UnitChecks.check;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;

import io.mirrorspark.UnitChecks;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;

/**
 * The checkpoint file manager on a local directory, without Spark running: a file appears whole
 * on close and only then, a cancelled one never, no temporary or .crc file is left, and Spark's
 * own factory picks the class from its setting. Run by tests/unit/test_jvm_units.py.
 */
public final class CheckpointFilesUnitTests {
    private CheckpointFilesUnitTests() {
    }

    public static void main(String[] args) throws Exception {
        File dir = Files.createTempDirectory("checkpoint-files").toFile();
        Configuration conf = new Configuration();
        conf.set("spark.sql.streaming.checkpointFileManagerClass", LocalCheckpointFiles.class.getName());
        Path root = new Path(dir.toURI());
        CheckpointFileManager files = CheckpointFileManager.create(root, conf);
        check(files instanceof LocalCheckpointFiles, "Spark's factory gives ours: " + files.getClass());

        Path offsets = new Path(root, "offsets/7");
        files.mkdirs(offsets.getParent());
        CheckpointFileManager.CancellableFSDataOutputStream out = files.createAtomic(offsets, false);
        out.write("v1\n{}".getBytes(StandardCharsets.UTF_8));
        check(!files.exists(offsets), "not visible before close");
        out.close();
        check(files.exists(offsets), "visible after close");
        try (FSDataInputStream in = files.open(offsets)) {
            check(new String(in.readAllBytes(), StandardCharsets.UTF_8).equals("v1\n{}"), "content whole");
        }
        String[] left = new File(dir, "offsets").list();
        check(Arrays.equals(left, new String[] {"7"}), "no temporary or .crc file: " + Arrays.toString(left));

        CheckpointFileManager.CancellableFSDataOutputStream cancelled = files.createAtomic(new Path(root, "offsets/8"), false);
        cancelled.write(1);
        cancelled.cancel();
        left = new File(dir, "offsets").list();
        check(Arrays.equals(left, new String[] {"7"}), "a cancelled file leaves nothing: " + Arrays.toString(left));
        UnitChecks.done();
    }
}
