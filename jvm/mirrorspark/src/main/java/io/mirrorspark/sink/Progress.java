package io.mirrorspark.sink;

import io.mirrorspark.kafka.OffsetRunList;

/**
 * What one target partition's last committed transaction says, exactly-once mode: {@code next},
 * the first source offset not yet committed, the offset pairs of the task's records so far, and the
 * topics it was committed for (the source topic's id and the remote topic's). It is committed as the
 * flow's progress group offset of the target partition (offset = next, the rest in its metadata), in
 * the same transaction as the records, so it can never disagree with what a {@code read_committed}
 * consumer sees. A batch that runs again after a crash skips the rows below {@code next} and still
 * reports their pairs, so translation stays exact; a row whose pair did not fit is reported as a
 * break ({@link TaskTransactions#committed}), so translation never runs ahead of it.
 *
 * <p>Progress of other topics than the batch's (a source or remote topic deleted and re-created since
 * it was committed: its offsets are another topic's) is not used to skip anything ({@link #heldFor}).
 *
 * <p>Metadata {@code ms2[p];<source id>|<remote id>;<runs>}: the oldest run kept as
 * {@code upstream:downstream:count}, each later one as its distance from the end of the one before on
 * both sides and its count (a transactional source's markers make many short runs; small numbers keep
 * more of them), {@code p} when older runs did not fit. {@code ms1[p];<runs>}, all absolute and
 * without topics, is still read.
 */
final class Progress {
    /** Kafka's {@code offset.metadata.max.bytes} is 4,096 by default: the pairs stay well below it. */
    static final int MAX_METADATA = 3_000;
    private static final String VERSION = "ms2";
    private static final String VERSION_1 = "ms1";
    static final Progress NONE = new Progress(-1L, new OffsetRunList(), false, null);

    /** The first source offset not committed yet; -1: this flow never committed the partition. */
    final long next;
    /** The offset runs of the last transaction, oldest first. */
    private final OffsetRunList runs;
    /** Older pairs of the last transaction did not fit in the metadata (their rows have no pair here). */
    final boolean partial;
    /** {@code <source topic id>|<remote topic id>} it was committed for (a part may be empty: not known
     *  then); null: committed by an earlier version, which did not say. */
    final String topics;

    Progress(long next, OffsetRunList runs, boolean partial, String topics) {
        this.next = next;
        this.runs = runs;
        this.partial = partial;
        this.topics = topics;
    }

    /** True when the source record at {@code upstream} is in a committed transaction already. */
    boolean committed(long upstream) {
        return upstream < next;
    }

    /** The target offset holding the committed copy of {@code upstream}, or -1 when not known here. */
    long downstream(long upstream) {
        return runs.targetOf(upstream);
    }

    /**
     * True when this progress may be used for a batch of {@code topics}: unless the source topic's id
     * or the remote topic's differs, both being known. Progress without topics (an earlier version's)
     * is used, as it was then; so is any progress for a batch not told its topics' ids.
     */
    /**
     * A topic id as Kafka writes it (URL-safe base64): progress committed by a driver that used
     * librdkafka's clients (0.1.0's) names the same id in the standard alphabet.
     */
    static String kafkaId(String id) {
        return id.replace('+', '-').replace('/', '_');
    }

    boolean heldFor(String topics) {
        if (this.topics == null || topics == null) {
            return true;
        }
        String[] mine = this.topics.split("\\|", -1);
        String[] theirs = topics.split("\\|", -1);
        for (int i = 0; i < Math.min(mine.length, theirs.length); i++) {
            if (!mine[i].isEmpty() && !theirs[i].isEmpty() && !kafkaId(mine[i]).equals(kafkaId(theirs[i]))) {
                return false;
            }
        }
        return true;
    }

    /** {@code progress} when it was committed for {@code topics}, else {@link #NONE}: nothing of theirs is committed. */
    static Progress forTopics(Progress progress, String topics) {
        return progress.heldFor(topics) ? progress : NONE;
    }

    /** The metadata string for {@code runs} of a batch not told its topics' ids. */
    static String encode(OffsetRunList runs) {
        return encode(null, runs);
    }

    /** The metadata string for {@code runs} of {@code topics}; the newest pairs are kept when they do not all fit. */
    static String encode(String topics, OffsetRunList runs) {
        OffsetRunList kept = runs.withoutBreaks();
        String head = VERSION + ";" + (topics == null ? "" : topics) + ";";
        int n = kept.size();
        // From the newest back: each run costs its distance from the one before; the oldest kept, its absolute form.
        int used = 0;
        int first = n;
        for (int i = n - 1; i >= 0; i--) {
            int absolute = absolute(kept, i).length();
            if (head.length() + 1 + used + absolute > MAX_METADATA) {
                break;
            }
            first = i;
            used += (i > 0 ? relative(kept, i).length() : absolute) + 1;
        }
        StringBuilder out = new StringBuilder();
        for (int i = first; i < n; i++) {
            if (i > first) {
                out.append(',');
            }
            out.append(i == first ? absolute(kept, i) : relative(kept, i));
        }
        return (first > 0 ? VERSION + "p" + head.substring(VERSION.length()) : head) + out;
    }

    private static String absolute(OffsetRunList runs, int i) {
        return runs.sourceStart(i) + ":" + runs.targetStart(i) + ":" + runs.count(i);
    }

    /** Run {@code i} as its distance from the end of run {@code i - 1} on both sides, and its count. */
    private static String relative(OffsetRunList runs, int i) {
        long before = runs.count(i - 1);
        return (runs.sourceStart(i) - runs.sourceStart(i - 1) - before) + ":"
            + (runs.targetStart(i) - runs.targetStart(i - 1) - before) + ":" + runs.count(i);
    }

    /** The progress an offset commit holds; an offset without mirrorspark's metadata has no pairs. */
    static Progress decode(long next, String metadata) {
        if (metadata != null && metadata.startsWith(VERSION)) {
            int flags = metadata.indexOf(';');
            int topicsEnd = flags < 0 ? -1 : metadata.indexOf(';', flags + 1);
            if (topicsEnd < 0) {
                return new Progress(next, new OffsetRunList(), true, null);
            }
            boolean partial = flags > VERSION.length() && metadata.charAt(VERSION.length()) == 'p';
            String topics = metadata.substring(flags + 1, topicsEnd);
            OffsetRunList runs = runs(metadata.substring(topicsEnd + 1), true);
            return runs == null ? new Progress(next, new OffsetRunList(), true, topics) : new Progress(next, runs, partial, topics);
        }
        if (metadata != null && metadata.startsWith(VERSION_1)) {
            int split = metadata.indexOf(';');
            boolean partial = split > VERSION_1.length() && metadata.charAt(VERSION_1.length()) == 'p';
            OffsetRunList runs = runs(split < 0 ? "" : metadata.substring(split + 1), false);
            return runs == null ? new Progress(next, new OffsetRunList(), true, null) : new Progress(next, runs, partial, null);
        }
        return new Progress(next, new OffsetRunList(), true, null);
    }

    /** The runs of {@code body}, each after the first relative to the one before when {@code relative}; null: damaged. */
    private static OffsetRunList runs(String body, boolean relative) {
        OffsetRunList runs = new OffsetRunList();
        if (body.isEmpty()) {
            return runs;
        }
        String[] parts = body.split(",");
        try {
            for (int i = 0; i < parts.length; i++) {
                String[] f = parts[i].split(":");
                if (f.length != 3) {
                    return null;
                }
                long up = Long.parseLong(f[0]);
                long down = Long.parseLong(f[1]);
                if (relative && i > 0) {
                    up += runs.sourceStart(i - 1) + runs.count(i - 1);
                    down += runs.targetStart(i - 1) + runs.count(i - 1);
                }
                runs.add(up, down, Long.parseLong(f[2]));
            }
        } catch (NumberFormatException e) {
            return null;
        }
        return runs;
    }

    @Override
    public String toString() {
        return "Progress(next=" + next + ", runs=" + runs + (partial ? ", partial" : "")
            + (topics == null ? "" : ", topics=" + topics) + ")";
    }
}
