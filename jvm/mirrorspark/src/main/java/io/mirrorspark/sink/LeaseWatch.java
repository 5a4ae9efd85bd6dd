package io.mirrorspark.sink;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.mirrorspark.kafka.ConnectionSettings;

/**
 * The write fence of an executor in a JVM of its own (a Spark cluster): the driver's lease thread
 * cannot renew {@link Fences} there, so the executor reads the lease from the target instead. Each
 * confirmation of a flow's lease is an offset commit in the flow's lease group, which the group
 * coordinator accepts only from its current member; its metadata says which instance wrote it and
 * until when that instance may write ({@code "<instance> <untilMillis>"}). This JVM reads it every
 * {@link #EVERY_MS}: while the writing instance is the one whose tasks run here, its deadline is
 * this JVM's; another instance's commit, or no answer from the target, lets it run out.
 *
 * <p>When the deadline passes, the flow's pooled producers are closed at once ({@link Producers#abort}),
 * so records handed to them before the deadline and not yet sent are dropped instead of landing next
 * to the new writer's copies (a driver stopped while its executors run, a slow target link with
 * megabytes queued). Only requests already on the wire can still land late; the executor logs them.
 */
final class LeaseWatch implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaseWatch.class);
    static final String TOPIC = "mirrorspark.leases.internal";
    static final long EVERY_MS = 500L;
    /** A watch no writer asked for this long stops (its flow stopped or moved to other executors). */
    static final long IDLE_MS = 10 * 60_000L;
    private static final ConcurrentHashMap<String, LeaseWatch> WATCHES = new ConcurrentHashMap<>();
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "mirrorspark-lease-watch");
        thread.setDaemon(true);
        return thread;
    });

    final AtomicLong until = new AtomicLong();
    private final String key;
    private final String flow;
    private final String group;
    private final String instance;
    private final Admin admin;
    private volatile long usedAt = System.currentTimeMillis();
    private volatile ScheduledFuture<?> schedule;
    private boolean aborted;

    private LeaseWatch(String key, WriteSettings settings) {
        this.key = key;
        this.flow = settings.flow;
        this.group = settings.leaseGroup;
        this.instance = settings.leaseInstance;
        Map<String, Object> conf = ConnectionSettings.of(settings.producer);
        conf.put("client.id", "mirrorspark-lease-watch");
        this.admin = Admin.create(conf);
    }

    /** The deadline of {@code settings.flow} in this JVM, read from its lease group on the target. */
    static AtomicLong of(WriteSettings settings) {
        String key = settings.flow + '\u0000' + settings.leaseGroup + '\u0000' + settings.leaseInstance;
        LeaseWatch watch = WATCHES.computeIfAbsent(key, k -> {
            LeaseWatch made = new LeaseWatch(k, settings);
            made.read();  // the first writer of this JVM starts with the current deadline, not with none
            made.schedule = TIMER.scheduleWithFixedDelay(made, EVERY_MS, EVERY_MS, TimeUnit.MILLISECONDS);
            return made;
        });
        watch.usedAt = System.currentTimeMillis();
        return watch.until;
    }

    /**
     * The deadline a lease confirmation's {@code metadata} gives {@code instance}: its wall-clock
     * milliseconds when that instance wrote it, 0 when another instance did or it says nothing readable.
     */
    static long deadline(String metadata, String instance) {
        if (metadata == null) {
            return 0L;
        }
        String[] fields = metadata.trim().split(" ");
        if (fields.length != 2 || !fields[0].equals(instance)) {
            return 0L;
        }
        try {
            return Long.parseLong(fields[1]);
        } catch (NumberFormatException e) {
            return 0L;
        }
    }

    @Override
    public void run() {
        if (System.currentTimeMillis() - usedAt > IDLE_MS) {
            WATCHES.remove(key, this);
            schedule.cancel(false);
            admin.close(Duration.ofSeconds(1));
            return;
        }
        read();
        boolean expired = System.currentTimeMillis() > until.get();
        if (expired && !aborted) {
            aborted = true;
            int closed = Producers.abort(flow);
            LOG.warn("flow {}: fenced: instance {} no longer holds the flow's lease (group {}); {} producer(s) of "
                + "this executor closed, records they held unsent are dropped, nothing more is sent from here",
                flow, instance, group, closed);
        } else if (!expired) {
            aborted = false;
        }
    }

    private void read() {
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(5, TimeUnit.SECONDS);
            OffsetAndMetadata lease = committed.get(new TopicPartition(TOPIC, 0));
            until.set(deadline(lease == null ? null : lease.metadata(), instance));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {  // the target out of reach: the deadline runs out by itself
            LOG.debug("flow {}: lease group {} not read: {}", flow, group, e.toString());
        }
    }
}
