package io.mirrorspark.kafka;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Comparator;

/**
 * Offset runs of one target partition, oldest first: run {@code i} says that source offsets
 * {@code sourceStart(i) .. sourceStart(i)+count(i)-1} were written, in order, at target offsets
 * {@code targetStart(i) ..} of the partition. A run of count 0 is a break: records whose target
 * offsets are not known (or a failed write), so the runs on either side are not contiguous.
 *
 * <p>The runs are kept as packed triples in one {@code long[]}, the count of runs first: the writer
 * keeps one list per target partition and extends it on the producer's I/O thread for every
 * acknowledgement, so no object is made per run; and the array alone is the whole list, which is
 * how {@link OffsetRuns} keeps lists in its store of JDK classes only ({@link JvmShared}). Nothing
 * outside this class reads the triples by index. Not thread-safe: its owner synchronizes.
 */
public final class OffsetRunList implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final int WIDTH = 3;

    /** {@code [runs, sourceStart, targetStart, count, sourceStart, ...]}, spare room at the end. */
    private long[] packed;

    /** An empty list. */
    public OffsetRunList() {
        this(4);
    }

    private OffsetRunList(int capacity) {
        this.packed = new long[1 + WIDTH * capacity];
    }

    private OffsetRunList(long[] packed) {
        this.packed = packed;
    }

    /** A list of {@code sourceStart, targetStart, count} triples, taken as they are (no run merged). */
    public static OffsetRunList of(long... triples) {
        if (triples.length % WIDTH != 0) {
            throw new IllegalArgumentException("offset runs come in triples, got " + triples.length + " numbers");
        }
        OffsetRunList out = new OffsetRunList(Math.max(1, triples.length / WIDTH));
        for (int i = 0; i < triples.length; i += WIDTH) {
            out.add(triples[i], triples[i + 1], triples[i + 2]);
        }
        return out;
    }

    /** The list whose whole state is {@code array} (from {@link #array}), without copying; null: a new empty list. */
    static OffsetRunList over(long[] array) {
        return array == null ? new OffsetRunList() : new OffsetRunList(array);
    }

    /** This list's whole state as JDK data, shared, not copied: for a store that holds JDK classes only. */
    long[] array() {
        return packed;
    }

    public int size() {
        return (int) packed[0];
    }

    public boolean isEmpty() {
        return size() == 0;
    }

    public long sourceStart(int i) {
        return packed[at(i)];
    }

    public long targetStart(int i) {
        return packed[at(i) + 1];
    }

    /** Records in run {@code i}; 0 for a break. */
    public long count(int i) {
        return packed[at(i) + 2];
    }

    public boolean isBreak(int i) {
        return count(i) == 0;
    }

    private int at(int i) {
        if (i < 0 || i >= size()) {
            throw new IndexOutOfBoundsException("run " + i + " of " + size());
        }
        return 1 + WIDTH * i;
    }

    /** Appends a run as it is, without merging it into the last one. */
    public OffsetRunList add(long sourceStart, long targetStart, long count) {
        int n = size();
        int at = 1 + WIDTH * n;
        if (at + WIDTH > packed.length) {
            packed = Arrays.copyOf(packed, 1 + 2 * (packed.length - 1));
        }
        packed[at] = sourceStart;
        packed[at + 1] = targetStart;
        packed[at + 2] = count;
        packed[0] = n + 1;
        return this;
    }

    /**
     * Adds a run of {@code count > 0} records, extending the last run instead when it continues it on
     * both sides; a break (count 0) is always added.
     */
    public OffsetRunList merge(long sourceStart, long targetStart, long count) {
        int n = size();
        if (n > 0 && count > 0) {
            int last = 1 + WIDTH * (n - 1);
            long held = packed[last + 2];
            if (held > 0 && packed[last] + held == sourceStart && packed[last + 1] + held == targetStart) {
                packed[last + 2] = held + count;
                return this;
            }
        }
        return add(sourceStart, targetStart, count);
    }

    /**
     * One record: source offset {@code upstream} is at target offset {@code downstream}. A negative
     * {@code downstream} (not known) is a break {@code (upstream, -1, 0)}, one for consecutive unknown records.
     */
    public OffsetRunList pair(long upstream, long downstream) {
        if (downstream >= 0) {
            return merge(upstream, downstream, 1);
        }
        int n = size();
        if (n > 0 && isBreak(n - 1)) {
            return this;  // the break already there covers this record too
        }
        return add(upstream, -1L, 0L);
    }

    /** Appends every run of {@code other} as it is. */
    public OffsetRunList addAll(OffsetRunList other) {
        for (int i = 0; i < other.size(); i++) {
            add(other.sourceStart(i), other.targetStart(i), other.count(i));
        }
        return this;
    }

    /** The target offset holding source offset {@code upstream}, or -1 when no run holds it. */
    public long targetOf(long upstream) {
        for (int i = 0; i < size(); i++) {
            long start = sourceStart(i);
            if (upstream >= start && upstream < start + count(i)) {
                return targetStart(i) + (upstream - start);
            }
        }
        return -1L;
    }

    /** A copy without the breaks. */
    public OffsetRunList withoutBreaks() {
        OffsetRunList out = new OffsetRunList(Math.max(1, size()));
        for (int i = 0; i < size(); i++) {
            if (!isBreak(i)) {
                out.add(sourceStart(i), targetStart(i), count(i));
            }
        }
        return out;
    }

    /** A copy in source order (a stable sort: runs of the same source offset keep their order). */
    public OffsetRunList sortedBySource() {
        Integer[] order = new Integer[size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingLong(this::sourceStart));
        OffsetRunList out = new OffsetRunList(Math.max(1, order.length));
        for (int i : order) {
            out.add(sourceStart(i), targetStart(i), count(i));
        }
        return out;
    }

    /** A copy no larger than its runs. */
    public OffsetRunList copy() {
        return new OffsetRunList(Arrays.copyOf(packed, 1 + WIDTH * Math.max(1, size())));
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof OffsetRunList)) {
            return false;
        }
        long[] theirs = ((OffsetRunList) other).packed;
        return Arrays.equals(packed, 0, 1 + WIDTH * size(), theirs, 0, 1 + WIDTH * (int) theirs[0]);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(Arrays.copyOf(packed, 1 + WIDTH * size()));
    }

    /** {@code [sourceStart:targetStart:count, ...]}. */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < size(); i++) {
            out.append(i == 0 ? "" : ", ").append(sourceStart(i)).append(':').append(targetStart(i))
                .append(':').append(count(i));
        }
        return out.append(']').toString();
    }
}
