package io.mirrorspark.source;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side: which partitions the pattern matches (re-listed every {@code topicRefreshMs}),
 * where each ends (one ListOffsets per trigger, through one driver consumer whose isolation level
 * gives the stable end in read_committed), and the batch's tasks ({@link RangeGroups}).
 *
 * New partitions start at their earliest offset, as with Spark's Kafka source; a partition gone
 * from the source or whose end went back is left out of the batch with a warning (mirrorspark's
 * guard reports and counts the loss).
 *
 * Under Spark's real-time trigger the same groups become long-running tasks: each reads its
 * partitions from the batch's start with no end until the batch's deadline, and
 * {@link #mergeOffsets} joins where each stopped into the next start (ADR 0027). A flow then needs a
 * task slot per group, not per partition.
 */
final class GroupedMicroBatchStream implements MicroBatchStream, SupportsAdmissionControl, SupportsRealTimeMode {
    private static final Logger LOG = LoggerFactory.getLogger(GroupedMicroBatchStream.class);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final SourceSettings settings;
    private final String checkpointLocation;
    private final Pattern pattern;
    private final IdleHold hold;
    private Consumer<byte[], byte[]> driver;
    private List<TopicPartition> partitions = List.of();
    private Map<String, Integer> listedCounts = Map.of();  // topic -> partition count of the listing
    private long listedAt;
    private final Consumer<byte[], byte[]> watchConsumer;  // the watcher's consumer when given (tests); null: made
    private EndWatcher watcher;
    private List<TopicPartition> watched;  // the listing the watcher was armed for
    private long checkedAt;                // when the brokers were last asked for the ends
    private long fullCheckedAt;            // ... for the ends of every partition listed
    private List<TopicPartition> heldOf;   // the listing whose held partitions ...
    private List<TopicPartition> held = List.of();  // ... these are
    private String lastJson;               // the offset Spark hands back as JSON on every trigger ...
    private PartitionOffsets lastParsed;   // ... parsed once
    private boolean realTime;
    private Map<TopicPartition, Long> batchStart;  // real-time: where the batch being read began
    private int batchTasks;                         // real-time: its task count

    GroupedMicroBatchStream(SourceSettings settings, String checkpointLocation) {
        this(settings, checkpointLocation, null);
    }

    /** {@code driver}: the consumer that lists the partitions and their offsets; null: one made from the settings when needed. */
    GroupedMicroBatchStream(SourceSettings settings, String checkpointLocation, Consumer<byte[], byte[]> driver) {
        this(settings, checkpointLocation, driver, null);
    }

    /** {@code watching}: the end watcher's consumer; null: one made from the settings when needed. */
    GroupedMicroBatchStream(SourceSettings settings, String checkpointLocation, Consumer<byte[], byte[]> driver,
                            Consumer<byte[], byte[]> watching) {
        this.settings = settings;
        this.checkpointLocation = checkpointLocation;
        this.driver = driver;
        this.watchConsumer = watching;
        this.pattern = Pattern.compile(settings.pattern);
        this.hold = new IdleHold(settings.holdPattern, settings.holdMs);
    }

    private Consumer<byte[], byte[]> driver() {
        if (driver == null) {
            Map<String, Object> config = new HashMap<>(settings.consumer);
            config.remove("group.id");
            config.put("enable.auto.commit", "false");
            config.put("enable.metrics.push", "false");  // an internal probe: see watcher()
            config.put("key.deserializer", ByteArrayDeserializer.class.getName());
            config.put("value.deserializer", ByteArrayDeserializer.class.getName());
            driver = new KafkaConsumer<>(config);
        }
        return driver;
    }

    /**
     * The partitions the pattern matches now (listed again when the last listing is older than the
     * refresh). The same list object while nothing changed: the watcher is armed for one listing.
     */
    private List<TopicPartition> partitions(boolean fresh) {
        long now = System.currentTimeMillis();
        if (fresh || now - listedAt >= settings.topicRefreshMs) {
            Map<String, Integer> counts = new HashMap<>();
            for (Map.Entry<String, List<PartitionInfo>> topic : driver().listTopics(TIMEOUT).entrySet()) {
                if (pattern.matcher(topic.getKey()).matches()) {
                    counts.put(topic.getKey(), topic.getValue().size());
                }
            }
            if (!counts.equals(listedCounts)) {
                List<TopicPartition> found = new ArrayList<>();
                for (Map.Entry<String, Integer> topic : counts.entrySet()) {
                    for (int p = 0; p < topic.getValue(); p++) {
                        found.add(new TopicPartition(topic.getKey(), p));
                    }
                }
                partitions = found;
                listedCounts = counts;
            }
            listedAt = now;
        }
        return partitions;
    }

    /** The held topics' partitions of {@code listed}, found once per listing. */
    private List<TopicPartition> heldListed(List<TopicPartition> listed) {
        if (heldOf != listed) {
            held = hold.held(listed);
            heldOf = listed;
        }
        return held;
    }

    /** The partitions to read: {@code assign}'s when given, else the pattern's. */
    private List<TopicPartition> listed(boolean fresh) {
        return settings.assigned != null ? settings.assigned : partitions(fresh);
    }

    private EndWatcher watcher() {
        if (watcher == null && watchConsumer != null) {
            watcher = new EndWatcher(watchConsumer, Duration.ofMillis(settings.idleCheckMs), "mirrorspark end watcher");
        }
        if (watcher == null) {
            Map<String, Object> config = new HashMap<>(settings.consumer);
            config.remove("group.id");
            config.put("enable.auto.commit", "false");
            config.put("auto.offset.reset", "none");
            config.put("fetch.max.bytes", "1");  // the broker still sends one batch: enough to wake the driver
            config.put("max.partition.fetch.bytes", "1");
            // The broker answers as soon as a record arrives: a longer wait delays nothing, and each
            // idle round trip walks every watched partition in the client (most of the watcher's CPU).
            config.put("fetch.max.wait.ms", String.valueOf(watchWaitMs(settings.idleCheckMs, config.get("request.timeout.ms"))));
            // mirrorspark's own probe, which MM2 does not have: its metrics (several per partition watched)
            // are not pushed to the brokers, nor kept for pushing (KIP-714's reporter, a key per metric).
            config.put("enable.metrics.push", "false");
            Object id = config.get("client.id");
            config.put("client.id", (id == null ? "mirrorspark-source" : id) + "-watch");
            config.put("key.deserializer", ByteArrayDeserializer.class.getName());
            config.put("value.deserializer", ByteArrayDeserializer.class.getName());
            watcher = new EndWatcher(new KafkaConsumer<>(config), Duration.ofMillis(settings.idleCheckMs),
                "mirrorspark end watcher (" + settings.pattern + ")");
        }
        return watcher;
    }

    /**
     * The watcher's broker-side wait: one idle check, under half the user's request timeout (a fetch
     * held longer than its request's timeout would be cut and sent again).
     */
    static long watchWaitMs(long idleCheckMs, Object requestTimeout) {
        long wait = Math.max(1L, idleCheckMs);
        if (requestTimeout != null) {
            try {
                wait = Math.min(wait, Math.max(1L, Long.parseLong(requestTimeout.toString().trim()) / 2));
            } catch (NumberFormatException e) {
                // the consumer refuses it when created; nothing to bound by
            }
        }
        return wait;
    }

    private Map<TopicPartition, Long> ends(Collection<TopicPartition> tps) {
        return tps.isEmpty() ? new HashMap<>() : new HashMap<>(driver().endOffsets(tps, TIMEOUT));
    }

    private Map<TopicPartition, Long> earliest(Collection<TopicPartition> tps) {
        return tps.isEmpty() ? new HashMap<>() : new HashMap<>(driver().beginningOffsets(tps, TIMEOUT));
    }

    @Override
    public synchronized Offset initialOffset() {
        Path dir = new Path(checkpointLocation);
        try {
            return keptInitial(dir.getFileSystem(SparkContext.getOrCreate().hadoopConfiguration()), dir,
                this::resolveStart);
        } catch (IOException e) {
            throw new IllegalStateException("the source's initial offsets in " + dir + ": " + e, e);
        }
    }

    /**
     * The query's first start, kept in {@code dir} so a restart before the first batch commits starts
     * from the same place ("latest" moves); resolved with {@code resolve} when not kept yet. Written
     * aside and renamed: a query stopped mid-write (a topic added as it started) left an empty file,
     * which failed every restart after it. An empty one (an earlier version's) was never planned from,
     * since the start is returned only once written, so it is resolved again.
     */
    static PartitionOffsets keptInitial(FileSystem fs, Path dir, java.util.function.Supplier<PartitionOffsets> resolve)
            throws IOException {
        Path file = new Path(dir, "mirrorspark-initial-offsets");
        if (fs.exists(file)) {
            String kept;
            try (InputStream in = fs.open(file)) {
                kept = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (org.apache.hadoop.fs.ChecksumException e) {
                kept = "";  // its checksum file written, its text not: cut short too
            }
            if (!kept.isBlank()) {
                return PartitionOffsets.parse(kept);
            }
            LOG.warn("{} is empty (its write was cut short); the start is resolved again", file);
        }
        PartitionOffsets initial = resolve.get();
        Path aside = new Path(dir, "mirrorspark-initial-offsets.tmp");
        try (OutputStream out = fs.create(aside, true)) {
            out.write(initial.json().getBytes(StandardCharsets.UTF_8));
        }
        fs.delete(file, false);
        if (!fs.rename(aside, file)) {
            throw new IOException("could not rename " + aside + " to " + file);
        }
        return initial;
    }

    private PartitionOffsets resolveStart() {
        List<TopicPartition> now = listed(true);
        String start = settings.startingOffsets.trim();
        if (start.equalsIgnoreCase("earliest")) {
            return new PartitionOffsets(earliest(now));
        }
        if (start.equalsIgnoreCase("latest")) {
            return new PartitionOffsets(ends(now));
        }
        Map<TopicPartition, Long> given = PartitionOffsets.parse(start).positions();
        Map<TopicPartition, Long> earliest = earliest(now);
        Map<TopicPartition, Long> latest = ends(now);
        Map<TopicPartition, Long> out = new HashMap<>();
        for (TopicPartition tp : now) {
            long at = given.getOrDefault(tp, -2L);
            out.put(tp, at == -2L ? earliest.get(tp) : at == -1L ? latest.get(tp) : at);
        }
        return new PartitionOffsets(out);
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used");
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        return settings.maxRecords > 0 ? ReadLimit.maxRows(settings.maxRecords) : ReadLimit.allAvailable();
    }

    /**
     * While the watcher is quiet, waits for its first record (or the next time the ends, the topic
     * listing or held heartbeats are due) before answering: an idle query then loops about once per
     * check instead of every polling delay, and a record wakes it at once.
     */
    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        if (realTime) {
            // Only progress reads it in real-time mode; waiting here would hold every batch boundary.
            return startOffset;
        }
        EndWatcher quiet;
        long waitMs;
        synchronized (this) {
            long now = System.currentTimeMillis();
            quiet = settings.idleCheckMs > 0 && watcher != null && watched != null && watched == partitions
                && watcher.quiet() ? watcher : null;
            waitMs = quiet == null ? 0L : Math.min(Math.min(checkedAt + settings.idleCheckMs,
                listedAt + settings.topicRefreshMs) - now, hold.dueIn(now));
        }
        if (waitMs > 0) {
            try {
                quiet.awaitStir(waitMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();  // the query stops: answer without asking the brokers
                return startOffset;
            }
        }
        return latest(startOffset, limit);
    }

    private synchronized Offset latest(Offset startOffset, ReadLimit limit) {
        Map<TopicPartition, Long> start = ((PartitionOffsets) startOffset).positions();
        long now = System.currentTimeMillis();
        List<TopicPartition> listed = listed(false);
        // Armed for this listing and quiet: nothing arrived after the ends seen last (the watcher's fetch
        // would have returned it), and every partition of the listing is in the start at those ends.
        boolean watching = settings.idleCheckMs > 0 && listed == watched && watcher().quiet();
        if (watching && now - checkedAt < settings.idleCheckMs && !hold.due(now)) {
            return startOffset;
        }
        // A quiet check asks only the held topics' ends (the heartbeats the watcher leaves out): asking all
        // of them every check was half of an idle query's stream thread at 10,000 partitions (JFR, ADR 0027
        // section 14). Every partition's ends are still asked every endCheckMs, behind the watcher.
        boolean partial = watching && now - fullCheckedAt < settings.endCheckMs;
        Map<TopicPartition, Long> ends;
        if (partial) {
            ends = new HashMap<>(start);
            ends.putAll(ends(heldListed(listed)));
        } else {
            ends = ends(listed);
            fullCheckedAt = now;
        }
        checkedAt = now;
        Map<TopicPartition, Long> latest = hold.apply(start, ends, now);
        if (latest.equals(start)) {
            if (settings.idleCheckMs > 0 && !partial) {  // a partial check leaves the watched ends as they were
                watcher().arm(hold.unheld(ends));
                watched = listed;
            }
            return startOffset;
        }
        if (watcher != null && !(hold.heldOnly() && listed == watched && watcher.quiet())) {
            // A batch of held heartbeats alone leaves the others where the watcher watches them: it keeps
            // watching (arming it again copied and compared every partition's end, ADR 0027 section 14).
            watcher.disarm();
            watched = null;
        }
        if (!(limit instanceof ReadMaxRows)) {
            return new PartitionOffsets(latest);
        }
        long max = ((ReadMaxRows) limit).maxRows();
        List<TopicPartition> added = new ArrayList<>(latest.keySet());
        added.removeAll(start.keySet());
        Map<TopicPartition, Long> from = new HashMap<>(start);
        from.putAll(earliest(added));
        long total = 0;
        for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
            total += Math.max(0L, e.getValue() - from.getOrDefault(e.getKey(), e.getValue()));
        }
        if (total <= max) {
            return new PartitionOffsets(latest);
        }
        Map<TopicPartition, Long> bounded = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
            long begin = from.getOrDefault(e.getKey(), e.getValue());
            long size = e.getValue() - begin;
            if (size <= 0) {
                bounded.put(e.getKey(), e.getValue());
                continue;
            }
            double share = (double) max * size / total;
            long step = share < 1 ? (long) Math.ceil(share) : (long) Math.floor(share);
            bounded.put(e.getKey(), begin + Math.min(size, step));
        }
        return new PartitionOffsets(bounded);
    }

    @Override
    public synchronized InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
        Map<TopicPartition, Long> start = ((PartitionOffsets) startOffset).positions();
        Map<TopicPartition, Long> end = ((PartitionOffsets) endOffset).positions();
        List<TopicPartition> added = new ArrayList<>(end.keySet());
        added.removeAll(start.keySet());
        Map<TopicPartition, Long> from = new HashMap<>(start);
        from.putAll(earliest(added));
        for (TopicPartition gone : start.keySet()) {
            if (!end.containsKey(gone)) {
                LOG.warn("{} is gone from the source (topic deleted?); records after offset {} were not read", gone,
                    start.get(gone));
            }
        }
        List<OffsetRange> ranges = new ArrayList<>();
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            TopicPartition tp = e.getKey();
            long begin = from.getOrDefault(tp, e.getValue());
            if (e.getValue() < begin) {
                LOG.warn("{} went back from offset {} to {} (topic re-created?); read again from the new earliest", tp,
                    begin, e.getValue());
                continue;
            }
            ranges.add(new OffsetRange(tp.topic(), tp.partition(), begin, e.getValue()));
        }
        List<List<OffsetRange>> groups = RangeGroups.split(ranges, settings.groups);
        InputPartition[] out = new InputPartition[groups.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = new GroupPartition(groups.get(i), false);
        }
        return out;
    }

    /**
     * Real-time mode reads a fixed list of partitions (the flow's plan; a new plan restarts the
     * query) and cannot bound a batch by records: both refused here, before any task starts.
     */
    @Override
    public synchronized void prepareForRealTimeMode() {
        if (settings.assigned == null) {
            throw new IllegalArgumentException("the mirrorspark source needs the assign option in real-time mode "
                + "(the flow's partitions): a pattern would read records the flow does not copy");
        }
        if (settings.maxRecords > 0) {
            throw new IllegalArgumentException("maxOffsetsPerTrigger cannot bound a real-time batch: a batch lasts "
                + "its duration, whatever it reads");
        }
        realTime = true;
    }

    /**
     * A real-time batch: every partition of the plan from the batch's start (a new one from its
     * earliest offset), with no end, in at most {@code groups} tasks.
     */
    @Override
    public synchronized InputPartition[] planInputPartitions(Offset startOffset) {
        if (!realTime || settings.assigned == null) {
            throw new IllegalStateException("planInputPartitions(start) is for real-time mode only");
        }
        Map<TopicPartition, Long> start = ((PartitionOffsets) startOffset).positions();
        List<TopicPartition> planned = settings.assigned;
        List<TopicPartition> added = new ArrayList<>(planned);
        added.removeAll(start.keySet());
        Map<TopicPartition, Long> from = new HashMap<>();
        for (TopicPartition tp : planned) {
            Long at = start.get(tp);
            if (at != null) {
                from.put(tp, at);
            }
        }
        from.putAll(earliest(added));
        for (TopicPartition gone : start.keySet()) {
            if (!from.containsKey(gone)) {
                LOG.warn("{} is no longer in the flow's plan; records after offset {} are not read", gone,
                    start.get(gone));
            }
        }
        List<List<TopicPartition>> groups = RangeGroups.splitOpen(new ArrayList<>(from.keySet()), settings.groups);
        InputPartition[] out = new InputPartition[groups.size()];
        for (int i = 0; i < out.length; i++) {
            List<OffsetRange> ranges = new ArrayList<>();
            for (TopicPartition tp : groups.get(i)) {
                ranges.add(new OffsetRange(tp.topic(), tp.partition(), from.get(tp), Long.MAX_VALUE));
            }
            out[i] = new GroupPartition(ranges, true);
        }
        batchStart = from;
        batchTasks = out.length;
        return out;
    }

    /**
     * The next batch's start: this batch's start, moved on by where each task stopped. Starting from
     * the batch's start matters: a partition missing here would count as new next batch and be read
     * again from its earliest offset. A partition a task gave up (re-created) is left out, so the
     * next batch reads it from its new earliest offset, as a micro-batch does.
     */
    @Override
    public synchronized Offset mergeOffsets(PartitionOffset[] offsets) {
        if (batchStart == null) {
            throw new IllegalStateException("mergeOffsets before planInputPartitions");
        }
        if (offsets.length != batchTasks) {
            throw new IllegalStateException("a real-time batch of " + batchTasks + " task(s) reported " + offsets.length
                + " end offset(s); the batch is not committed");
        }
        Map<TopicPartition, Long> merged = new HashMap<>(batchStart);
        Map<TopicPartition, Long> drops = new HashMap<>();
        for (PartitionOffset offset : offsets) {
            GroupOffset group = (GroupOffset) offset;
            for (Map.Entry<TopicPartition, Long> e : group.next.entrySet()) {
                Long begin = batchStart.get(e.getKey());
                if (begin == null) {
                    throw new IllegalStateException(e.getKey() + " was read but not planned in this batch");
                }
                if (e.getValue() < begin) {
                    throw new IllegalStateException(e.getKey() + " went back from " + begin + " to " + e.getValue()
                        + " in one batch");
                }
                merged.put(e.getKey(), e.getValue());
            }
            for (TopicPartition tp : group.dropped) {
                drops.put(tp, group.next.get(tp));
            }
        }
        if (!drops.isEmpty()) {  // kept where they stopped: the driver decides (re-created or truncated)
            RealTimeDrops.add(settings.flow, drops);
        }
        return new PartitionOffsets(merged);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new GroupReaderFactory(settings);
    }

    @Override
    public synchronized Offset deserializeOffset(String json) {
        // Spark passes the last batch's end back as JSON on every trigger, 10 times a second while idle
        if (lastParsed == null || !json.equals(lastJson)) {
            lastParsed = PartitionOffsets.parse(json);
            lastJson = json;
        }
        return lastParsed;
    }

    @Override
    public void commit(Offset end) {
        // Nothing to commit on the source cluster: positions live in Spark's offset log.
    }

    @Override
    public synchronized void stop() {
        if (watcher != null) {
            watcher.close();
            watcher = null;
        }
        if (driver != null) {
            driver.close(Duration.ofSeconds(5));
            driver = null;
        }
    }

    @Override
    public String toString() {
        return "mirrorspark Kafka source (" + settings.pattern + ")";
    }
}
