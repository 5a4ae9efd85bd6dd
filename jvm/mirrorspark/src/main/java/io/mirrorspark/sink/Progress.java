package io.mirrorspark.sink;

import java.util.Arrays;

/**
 * What one target partition's last committed transaction says, exactly-once mode: {@code next},
 * the first source offset not yet committed, and the offset pairs of that transaction's records.
 * It is committed as the flow's progress group offset of the target partition (offset = next, the
 * pairs in its metadata), in the same transaction as the records, so it can never disagree with
 * what a {@code read_committed} consumer sees. A batch that runs again after a crash skips the rows
 * below {@code next} and still reports their pairs, so translation stays exact.
 */
final class Progress {
    /** Kafka's {@code offset.metadata.max.bytes} is 4,096 by default: the pairs stay well below it. */
    static final int MAX_METADATA = 3_000;
    private static final String VERSION = "ms1";
    static final Progress NONE = new Progress(-1L, new long[0], false);

    /** The first source offset not committed yet; -1: this flow never committed the partition. */
    final long next;
    /** {@code upstream, downstream, count} triples of the last transaction, oldest first. */
    private final long[] runs;
    /** Older pairs of the last transaction did not fit in the metadata. */
    final boolean partial;

    Progress(long next, long[] runs, boolean partial) {
        this.next = next;
        this.runs = runs;
        this.partial = partial;
    }

    /** True when the source record at {@code upstream} is in a committed transaction already. */
    boolean committed(long upstream) {
        return upstream < next;
    }

    /** The target offset holding the committed copy of {@code upstream}, or -1 when not known here. */
    long downstream(long upstream) {
        for (int i = 0; i < runs.length; i += 3) {
            if (upstream >= runs[i] && upstream < runs[i] + runs[i + 2]) {
                return runs[i + 1] + (upstream - runs[i]);
            }
        }
        return -1L;
    }

    /** The metadata string for {@code runs}; the newest pairs are kept when they do not all fit. */
    static String encode(long[] runs) {
        StringBuilder out = new StringBuilder();
        int kept = 0;
        for (int i = runs.length - 3; i >= 0; i -= 3) {
            String run = runs[i] + ":" + runs[i + 1] + ":" + runs[i + 2];
            if (VERSION.length() + 2 + out.length() + run.length() + 1 > MAX_METADATA) {
                break;
            }
            out.insert(0, (kept == 0 ? "" : ",")).insert(0, run);
            kept++;
        }
        boolean partial = kept * 3 < runs.length;
        return VERSION + (partial ? "p" : "") + ";" + out;
    }

    /** The progress an offset commit holds; an offset without mirrorspark's metadata has no pairs. */
    static Progress decode(long next, String metadata) {
        if (metadata == null || !metadata.startsWith(VERSION)) {
            return new Progress(next, new long[0], true);
        }
        int split = metadata.indexOf(';');
        boolean partial = split > VERSION.length() && metadata.charAt(VERSION.length()) == 'p';
        String body = split < 0 ? "" : metadata.substring(split + 1);
        if (body.isEmpty()) {
            return new Progress(next, new long[0], partial);
        }
        String[] parts = body.split(",");
        long[] runs = new long[parts.length * 3];
        try {
            for (int i = 0; i < parts.length; i++) {
                String[] f = parts[i].split(":");
                runs[3 * i] = Long.parseLong(f[0]);
                runs[3 * i + 1] = Long.parseLong(f[1]);
                runs[3 * i + 2] = Long.parseLong(f[2]);
            }
        } catch (RuntimeException e) {
            return new Progress(next, new long[0], true);
        }
        return new Progress(next, runs, partial);
    }

    @Override
    public String toString() {
        return "Progress(next=" + next + ", runs=" + Arrays.toString(runs) + (partial ? ", partial" : "") + ")";
    }
}
