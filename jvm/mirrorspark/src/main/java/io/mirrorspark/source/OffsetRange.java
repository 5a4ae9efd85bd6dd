package io.mirrorspark.source;

import java.io.Serializable;

/** The records of one Kafka partition a batch reads: offsets {@code from} (inclusive) to {@code until} (exclusive). */
public final class OffsetRange implements Serializable {
    private static final long serialVersionUID = 1L;

    public final String topic;
    public final int partition;
    public final long from;
    public final long until;

    public OffsetRange(String topic, int partition, long from, long until) {
        this.topic = topic;
        this.partition = partition;
        this.from = from;
        this.until = until;
    }

    public long size() {
        return Math.max(0L, until - from);
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "[" + from + ", " + until + ")";
    }
}
