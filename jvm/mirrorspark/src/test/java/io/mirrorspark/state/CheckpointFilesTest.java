package io.mirrorspark.state;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint file manager on a local directory, without Spark running: a file appears whole
 * on close and only then, a cancelled one never, no temporary or .crc file is left, and Spark's
 * own factory picks the class from its setting.
 */
final class CheckpointFilesTest {

    @Test
    void aFileAppearsWholeOnCloseAndACancelledOneNever(@TempDir File dir) throws Exception {
        Configuration conf = new Configuration();
        conf.set("spark.sql.streaming.checkpointFileManagerClass", LocalCheckpointFiles.class.getName());
        Path root = new Path(dir.toURI());
        CheckpointFileManager files = CheckpointFileManager.create(root, conf);
        assertInstanceOf(LocalCheckpointFiles.class, files, "Spark's factory gives ours");

        Path offsets = new Path(root, "offsets/7");
        files.mkdirs(offsets.getParent());
        CheckpointFileManager.CancellableFSDataOutputStream out = files.createAtomic(offsets, false);
        out.write("v1\n{}".getBytes(StandardCharsets.UTF_8));
        assertFalse(files.exists(offsets), "not visible before close");
        out.close();
        assertTrue(files.exists(offsets), "visible after close");
        try (FSDataInputStream in = files.open(offsets)) {
            assertEquals("v1\n{}", new String(in.readAllBytes(), StandardCharsets.UTF_8), "content whole");
        }
        assertArrayEquals(new String[] {"7"}, new File(dir, "offsets").list(), "no temporary or .crc file");

        CheckpointFileManager.CancellableFSDataOutputStream cancelled = files.createAtomic(new Path(root, "offsets/8"), false);
        cancelled.write(1);
        cancelled.cancel();
        assertArrayEquals(new String[] {"7"}, new File(dir, "offsets").list(), "a cancelled file leaves nothing");
    }
}
