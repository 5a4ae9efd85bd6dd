package io.mirrorspark.source;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.mirrorspark.kafka.PollBoundary;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;
import org.apache.spark.unsafe.types.UTF8String;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task: a single consumer reads every range of its group, each partition from its first offset
 * up to (not including) its end, in order. A partition is done when the consumer's position
 * reaches the end, which also covers offsets with no record (transaction markers, compaction).
 * Records retention removed before they were read are skipped from the earliest offset left
 * (mirrorspark reports the gap from the batch's first written offsets); a shrunken partition
 * (re-created) is given up when its end is behind our position, and one whose topic is gone when
 * the source says so. Records still due from a partition that answers nothing for
 * {@code pollTimeoutMs} (a broker down, a leader lost) are never skipped: the task fails with a
 * {@link SourceStalledException}, which the driver retries until the source answers again.
 *
 * In real-time mode the ranges have no end: Spark asks {@link #nextWithTimeout} until the batch's
 * deadline, then {@link #getOffset} once for where each partition stopped. A partition caught up
 * with its end is idle there, not stalled; one whose end went behind the position (re-created) is
 * given up and reported in the {@link GroupOffset}, so the next batch reads it from its earliest offset.
 */
final class GroupReader implements SupportsRealTimeRead<InternalRow> {
    private static final Logger LOG = LoggerFactory.getLogger(GroupReader.class);
    private static final long CHECK_MS = 2_000L;
    /**
     * Real-time mode: a poll's wait while every partition is caught up. Each return of an empty poll
     * walks the group's partitions (the consumer's next fetch, the stall check), which was most of a
     * quiet task's CPU (ADR 0027 section 22). A record still ends the wait at once; a flow being
     * stopped ends its batch within this wait, not at the batch's deadline.
     */
    static final long CAUGHT_UP_WAIT_MS = 5_000L;

    private final SourceSettings settings;
    private final boolean realTime;
    private final Map<TopicPartition, Long> dropped = new HashMap<>();  // real-time: given up, at the offset not read
    private final Consumer<byte[], byte[]> consumer;
    private final Map<TopicPartition, Long> until = new HashMap<>();
    private final Set<TopicPartition> open = new HashSet<>();
    private final Map<TopicPartition, UTF8String> topicNames = new HashMap<>();
    private final HeldPauses held;  // real-time: heartbeats paused between fetches while nothing else comes
    private Iterator<ConsumerRecord<byte[], byte[]>> buffered = java.util.Collections.emptyIterator();
    private InternalRow current;
    /** The partition the last record came from (see {@link #startRun}). */
    private String runTopic;
    private int runPartition = -1;
    private long runEnd = -1L;
    private UTF8String runName;
    /**
     * True until the read ends normally: a reader closed after a failure closes its consumer instead
     * of giving it back to the pool.
     */
    private boolean failed = true;
    private long lastProgress = System.currentTimeMillis();
    private long lastCheck = System.currentTimeMillis();
    /** Real-time: the last stall check found every open partition caught up, and no record came since. */
    private boolean caughtUp;
    /** Topics the source's metadata did not list at the last check (deleted, if still missing at the next). */
    private Set<String> missingBefore = new HashSet<>();

    GroupReader(SourceSettings settings, List<OffsetRange> ranges, boolean realTime) {
        this(settings, ranges, ConsumerPool.acquire(settings.consumer, realTime, partitionsOf(ranges)), realTime);
    }

    /** A micro-batch task's reader with the consumer given (a test's). */
    GroupReader(SourceSettings settings, List<OffsetRange> ranges, Consumer<byte[], byte[]> consumer) {
        this(settings, ranges, consumer, false);
    }

    /** With the consumer given (the pool's, or a test's); it goes back to the pool on close. */
    GroupReader(SourceSettings settings, List<OffsetRange> ranges, Consumer<byte[], byte[]> consumer,
            boolean realTime) {
        this.settings = settings;
        this.realTime = realTime;
        this.consumer = consumer;
        this.held = realTime && settings.holdMs > 0 && !settings.holdPattern.isEmpty()
            ? new HeldPauses(settings.holdPattern, settings.holdMs) : null;
        List<TopicPartition> assigned = new ArrayList<>();
        for (OffsetRange r : ranges) {
            TopicPartition tp = new TopicPartition(r.topic, r.partition);
            assigned.add(tp);
            until.put(tp, r.until);
            topicNames.put(tp, UTF8String.fromString(r.topic));
            if (r.until > r.from) {
                open.add(tp);
            }
        }
        consumer.assign(assigned);
        // A real-time consumer comes back from the pool with its assignment, and with what it paused.
        consumer.resume(consumer.paused());
        for (OffsetRange r : ranges) {
            consumer.seek(new TopicPartition(r.topic, r.partition), r.from);
        }
        pauseDone();
    }

    private static Set<TopicPartition> partitionsOf(List<OffsetRange> ranges) {
        Set<TopicPartition> out = new HashSet<>();
        for (OffsetRange r : ranges) {
            out.add(new TopicPartition(r.topic, r.partition));
        }
        return out;
    }

    @Override
    public boolean next() {
        while (true) {
            if (takeBuffered() != null) {
                return true;
            }
            closeFinished();
            if (open.isEmpty()) {
                failed = false;
                return false;
            }
            poll(200L);
        }
    }

    /**
     * Real-time mode: the next record, waiting for one until {@code startTimeMs + timeoutMs}. "No
     * record" ends the task for the rest of the batch, so it is answered only at the deadline.
     */
    @Override
    public RecordStatus nextWithTimeout(Long startTimeMs, Long timeoutMs) {
        long deadline = startTimeMs + timeoutMs;
        while (true) {
            ConsumerRecord<byte[], byte[]> r = takeBuffered();
            if (r != null) {
                return r.timestampType() == TimestampType.LOG_APPEND_TIME
                    ? RecordStatus.newStatusWithArrivalTimeMs(r.timestamp())
                    : RecordStatus.newStatusWithoutArrivalTime(true);
            }
            long now = System.currentTimeMillis();
            if (now >= deadline || BatchEnds.requested(settings.flow)) {  // the flow is being stopped: end it now
                failed = false;
                return RecordStatus.newStatusWithoutArrivalTime(false);
            }
            if (PollBoundary.wanted()) {  // exactly-once: what is fetched already joins the open transaction
                poll(0L);
                if (buffered.hasNext()) {
                    continue;
                }
                if (fetchedToEnd()) {
                    PollBoundary.reached();  // nothing more for now: the sink commits before the wait
                }
                // else a fetch is on its way with more: the transaction takes it too, and the sink commits
                // it by age (mirrorspark.realtime.transaction.ms) if it has not come by then.
            }
            // A poll returns as soon as a record comes: waiting longer costs no latency, only fewer
            // wake-ups over the task's partitions while they are quiet (until the next check).
            poll(Math.min(deadline - now, caughtUp ? CAUGHT_UP_WAIT_MS : CHECK_MS));
        }
    }

    /**
     * Where each partition stopped: the first record not handed to Spark, else the consumer's
     * position (past transaction markers and compacted offsets); given-up partitions apart.
     */
    @Override
    public PartitionOffset getOffset() {
        List<ConsumerRecord<byte[], byte[]>> rest = new ArrayList<>();
        buffered.forEachRemaining(rest::add);
        buffered = rest.iterator();
        runTopic = null;
        Map<TopicPartition, Long> next = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : rest) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            if (open.contains(tp)) {
                next.putIfAbsent(tp, r.offset());
            }
        }
        for (TopicPartition tp : until.keySet()) {
            if (!dropped.containsKey(tp) && !next.containsKey(tp)) {
                next.put(tp, consumer.position(tp, Duration.ofSeconds(30)));
            }
        }
        next.putAll(dropped);
        // A normal end: Spark asks where the task stopped only then. It also ends a task whose last call
        // answered a record once its own clock passed the deadline, without asking again; taking that
        // for a failure closed the consumer, and the next batch's new one set up its fetch session for
        // every partition again (about 0.9 s of CPU at 1,500 partitions; ADR 0027 section 11).
        failed = false;
        return new GroupOffset(next, dropped.keySet());
    }

    /** The next polled record still due (its partition open, below its end), made the current row; null: none left. */
    private ConsumerRecord<byte[], byte[]> takeBuffered() {
        while (buffered.hasNext()) {
            ConsumerRecord<byte[], byte[]> r = buffered.next();
            if (r.partition() != runPartition || !r.topic().equals(runTopic)) {
                startRun(r.topic(), r.partition());
            }
            if (r.offset() < runEnd) {
                current = row(r, runName);
                return r;
            }
        }
        return null;
    }

    /**
     * A poll's records come in runs of one partition: its end and name are looked up once per run,
     * not once per record. A partition not open (done, given up, not ours) gets an end of -1.
     */
    private void startRun(String topic, int partition) {
        TopicPartition tp = new TopicPartition(topic, partition);
        Long end = until.get(tp);
        runTopic = topic;
        runPartition = partition;
        runEnd = end == null || !open.contains(tp) ? -1L : end;
        runName = topicNames.get(tp);
    }

    private void poll(long waitMs) {
        runTopic = null;  // the open partitions may change before the next records
        ConsumerRecords<byte[], byte[]> records;
        long wait = waitMs;
        if (held != null) {
            long before = System.currentTimeMillis();
            held.due(consumer, before);
            wait = held.wait(waitMs, before);
        }
        try {
            records = consumer.poll(Duration.ofMillis(wait));
        } catch (OffsetOutOfRangeException e) {
            skipToEarliest(e.offsetOutOfRangePartitions());
            return;
        }
        long now = System.currentTimeMillis();
        if (!records.isEmpty()) {
            lastProgress = now;
            lastCheck = now;
            caughtUp = false;
            buffered = records.iterator();
            if (held != null) {
                held.polled(consumer, records.partitions(), now);
            }
            return;
        }
        if (now - lastCheck >= CHECK_MS) {
            lastCheck = now;
            checkStalled(now);
        }
    }

    /** Partitions whose position reached their end are done; paused so no more is fetched for them. */
    private void closeFinished() {
        List<TopicPartition> done = new ArrayList<>();
        for (TopicPartition tp : open) {
            if (consumer.position(tp) >= until.get(tp)) {
                done.add(tp);
            }
        }
        if (!done.isEmpty()) {
            open.removeAll(done);
            consumer.pause(done);
        }
    }

    private void pauseDone() {
        List<TopicPartition> done = new ArrayList<>(until.keySet());
        done.removeAll(open);
        if (!done.isEmpty()) {
            consumer.pause(done);
        }
    }

    /**
     * Positions the source no longer has. Below its log start (retention, deleteRecords): read on from
     * there, the gap reported by mirrorspark. Past its end, in real-time mode: the partition went back (its
     * topic re-created, or truncated); it is given up where it stands, and the driver checks the topic's
     * id when the batch ends (a micro-batch's range was checked before it was planned).
     */
    private void skipToEarliest(Map<TopicPartition, Long> lost) {
        Map<TopicPartition, Long> earliest = consumer.beginningOffsets(lost.keySet(), Duration.ofSeconds(30));
        for (Map.Entry<TopicPartition, Long> e : lost.entrySet()) {
            TopicPartition tp = e.getKey();
            long position = e.getValue();
            Long first = earliest.get(tp);
            if (realTime && first != null && first <= position) {
                giveUp(tp, position, tp + ": offset " + position + " is past its end (topic re-created, or truncated); "
                    + "it waits there until the batch's end, where the topic's id is checked");
                continue;
            }
            long to = first == null ? until.get(tp) : first;
            if (settings.failOnDataLoss) {
                throw new DataLossException(tp + ": offsets " + position + " to " + (to - 1)
                    + " were removed from the source (retention or deletion) before they were read, and "
                    + "mirrorspark.data.loss = fail: nothing past them is copied");
            }
            LOG.warn("{}: offsets before {} are gone from the source (retention or deletion); reading on from there",
                tp, to);
            consumer.seek(tp, Math.min(to, until.get(tp)));
        }
    }

    /**
     * Exactly-once in real-time mode: no open partition's last fetch answer showed records past what
     * was handed over (a partition not fetched yet, or paused to hold its heartbeats, counts as at its
     * end). A backlog's task then commits by age, not at each drained fetch; a caught-up task at once.
     */
    private boolean fetchedToEnd() {
        Collection<TopicPartition> holding = held == null ? Set.of() : held.holding();
        for (TopicPartition tp : open) {
            if (consumer.currentLag(tp).orElse(0L) > 0L && !holding.contains(tp)) {
                return false;
            }
        }
        return true;
    }

    /** Nothing came for a while: give up partitions whose end moved behind us or that stopped answering. */
    private void checkStalled(long now) {
        List<TopicPartition> waiting = new ArrayList<>(open);
        if (realTime) {
            // Caught up by the last fetch's answer (its high watermark, the stable end in read_committed):
            // idle, no request. A task holds hundreds of quiet partitions; asking all their ends every
            // check was most of its idle CPU. An end that went behind answers the fetch "out of range".
            waiting.removeIf(tp -> consumer.currentLag(tp).orElse(-1L) == 0L);
            if (held != null) {
                waiting.removeAll(held.holding());  // paused on purpose for less than a check's wait
            }
            caughtUp = waiting.isEmpty();
            if (caughtUp) {
                return;
            }
        }
        Map<TopicPartition, Long> ends;
        try {
            ends = consumer.endOffsets(waiting, Duration.ofSeconds(10));  // the stable end in read_committed
        } catch (RuntimeException e) {
            ends = new HashMap<>();
            LOG.debug("end offsets of {} unavailable: {}", waiting, e.toString());
        }
        List<TopicPartition> stalled = new ArrayList<>();
        int atEnd = 0;  // real-time: caught up, by the ends just asked
        for (TopicPartition tp : waiting) {
            Long end = ends.get(tp);
            long position = consumer.position(tp);
            if (realTime && end != null && end < position) {
                giveUp(tp, position, tp + ": ends at " + end + ", behind offset " + position
                    + " read already (topic re-created, or truncated); it waits there until the batch's end, where "
                    + "the topic's id is checked");
            } else if (realTime && end != null && end == position) {
                atEnd++;  // caught up: idle, not stalled
            } else if (!realTime && end != null && end <= position) {
                giveUp(tp, position, tp + ": ends at " + end + ", before the batch's end " + until.get(tp)
                    + "; the rest is not there to read");
            } else if (now - lastProgress > settings.pollTimeoutMs) {
                stalled.add(tp);
            }
        }
        caughtUp = realTime && atEnd == waiting.size();
        if (stalled.isEmpty()) {
            return;
        }
        Set<String> gone = topicsGone(stalled);
        Set<String> confirmed = new HashSet<>(gone);
        confirmed.retainAll(missingBefore);  // missing twice in a row: a cache still filling is no deletion
        missingBefore = gone;
        StringBuilder due = new StringBuilder();
        for (TopicPartition tp : stalled) {
            if (confirmed.contains(tp.topic())) {
                long position = consumer.position(tp);
                giveUp(tp, position, tp + ": its topic is gone from the source (deleted); offsets " + position
                    + (realTime ? " on" : " to " + (until.get(tp) - 1) + " of this batch's range")
                    + " cannot be read");
            } else if (!gone.contains(tp.topic())) {  // a topic missing once is looked at again at the next check
                due.append(due.length() == 0 ? "" : ", ").append(tp).append(" at ").append(consumer.position(tp))
                    .append(" (batch end ").append(until.get(tp)).append(')');
            }
        }
        if (due.length() > 0) {
            throw new SourceStalledException("no record for " + (now - lastProgress) + " ms from " + due
                + ": the source does not answer (broker down, leader lost?); the task fails so the flow retries "
                + "this batch whole when it answers, nothing skipped");
        }
    }

    /**
     * Topics of {@code stalled} the source's metadata answers for and does not know: deleted. A source
     * that does not answer knows nothing, so nothing is taken for gone.
     */
    private Set<String> topicsGone(List<TopicPartition> stalled) {
        Set<String> gone = new HashSet<>();
        Map<String, List<org.apache.kafka.common.PartitionInfo>> topics;
        try {
            topics = consumer.listTopics(Duration.ofSeconds(10));
        } catch (RuntimeException e) {
            LOG.debug("topic list unavailable: {}", e.toString());
            return gone;
        }
        for (TopicPartition tp : stalled) {
            List<org.apache.kafka.common.PartitionInfo> parts = topics.get(tp.topic());
            if (parts == null || parts.stream().noneMatch(p -> p.partition() == tp.partition())) {
                gone.add(tp.topic());
            }
        }
        return gone;
    }

    /** Due records did not come: retriable, the batch is read again whole once the source answers. */
    static final class SourceStalledException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        SourceStalledException(String message) {
            super(message);
        }
    }

    /** Records that cannot be read any more, with mirrorspark.data.loss = fail: the task fails. */
    static final class DataLossException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        DataLossException(String message) {
            super(message);
        }
    }

    /** {@code position}: the first offset not read, where a real-time batch's next start keeps the partition. */
    private void giveUp(TopicPartition tp, long position, String why) {
        if (settings.failOnDataLoss) {
            throw new DataLossException(why + ", and mirrorspark.data.loss = fail");
        }
        LOG.warn(why);
        open.remove(tp);
        if (realTime) {
            dropped.put(tp, position);
        }
        if (held != null) {
            held.forget(tp);
        }
        consumer.pause(List.of(tp));
    }

    private static InternalRow row(ConsumerRecord<byte[], byte[]> r, UTF8String topic) {
        GenericArrayData headers = null;
        Header[] hs = r.headers().toArray();
        if (hs.length > 0) {
            Object[] rows = new Object[hs.length];
            for (int i = 0; i < hs.length; i++) {
                rows[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(hs[i].key()), hs[i].value()});
            }
            headers = new GenericArrayData(rows);
        }
        return new GenericInternalRow(new Object[] {
            r.key(), r.value(), topic, r.partition(), r.offset(),
            r.timestamp() * 1000L, r.timestampType().id, headers});
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public void close() {
        ConsumerPool.release(settings.consumer, realTime, consumer, failed);
    }
}
