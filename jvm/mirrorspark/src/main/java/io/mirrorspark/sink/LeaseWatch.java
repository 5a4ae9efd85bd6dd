package io.mirrorspark.sink;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.mirrorspark.kafka.ConnectionSettings;

/**
 * The write fence of an executor in a JVM of its own (a Spark cluster): the driver's lease thread
 * cannot renew {@link Fences} there, so the executor reads the lease from the target instead. Each
 * confirmation of a flow's lease is an offset commit in the flow's lease group, which the group
 * coordinator accepts only from its current member; its metadata says which writer (instance and
 * process) made it and until when that writer may write ({@code "<writer> <untilMillis>"}; a clean
 * stop commits 0). This JVM reads it every {@link #EVERY_MS} without blocking: while the writer is
 * the one whose tasks run here, its deadline is this JVM's; another writer's commit, or no answer
 * from the target, lets it run out.
 *
 * <p>Each round first looks at the deadline: once it has passed, the flow's pooled producers are
 * closed at once ({@link Producers#abort}), so records handed to them before the deadline and not
 * yet sent are dropped instead of landing next to the new writer's copies (a driver stopped while
 * its executors run, a slow target link with megabytes queued). Requests already on the wire can
 * still be acknowledged late; the executor logs them ({@link Fences#takeLate}).
 */
final class LeaseWatch implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaseWatch.class);
    static final String TOPIC = "mirrorspark.leases.internal";
    static final long EVERY_MS = 500L;
    /** A read that does not answer within this long counts as no answer (the deadline runs out by itself). */
    static final int READ_TIMEOUT_MS = 5_000;
    /** A watch no writer used for this long stops (its flow stopped or moved to other executors). */
    static final long IDLE_MS = 10 * 60_000L;
    /** Read failures are logged once, then at most this often. */
    static final long FAILURE_LOG_EVERY_MS = 60_000L;
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
    private final String writer;
    private final Map<String, Object> conf;
    private final AtomicInteger users = new AtomicInteger();
    private final AtomicBoolean reading = new AtomicBoolean();
    private volatile long usedAt = System.currentTimeMillis();
    private Admin admin;
    private ScheduledFuture<?> schedule;
    private boolean aborted;
    private volatile long failureLoggedAt;

    private LeaseWatch(String key, WriteSettings settings) {
        this.key = key;
        this.flow = settings.flow;
        this.group = settings.leaseGroup;
        this.writer = settings.leaseInstance;
        this.conf = ConnectionSettings.of(settings.producer);
        conf.put("client.id", "mirrorspark-lease-watch");
        conf.put("request.timeout.ms", String.valueOf(READ_TIMEOUT_MS));
        conf.put("default.api.timeout.ms", String.valueOf(READ_TIMEOUT_MS));
    }

    /** The watch of {@code settings.flow} in this JVM, used by one more writer until {@link #release}. */
    static LeaseWatch acquire(WriteSettings settings) {
        String key = settings.flow + '\u0000' + settings.leaseGroup + '\u0000' + settings.leaseInstance;
        LeaseWatch watch = WATCHES.compute(key, (k, w) -> {
            LeaseWatch use = w != null ? w : new LeaseWatch(k, settings);
            use.users.incrementAndGet();
            use.usedAt = System.currentTimeMillis();
            return use;
        });
        watch.start();
        return watch;
    }

    /** A writer is done with this watch. */
    void release() {
        usedAt = System.currentTimeMillis();
        users.decrementAndGet();
    }

    /** The first writer reads the lease before it writes (the others wait for that read), then rounds begin. */
    private synchronized void start() {
        if (admin != null) {
            return;
        }
        admin = Admin.create(conf);
        try {
            deadline(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(READ_TIMEOUT_MS, TimeUnit.MILLISECONDS), null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            deadline(null, e);
        }
        schedule = TIMER.scheduleWithFixedDelay(this, EVERY_MS, EVERY_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * The deadline a lease confirmation's {@code metadata} gives {@code writer}: its wall-clock
     * milliseconds when that writer made it, 0 when another writer did or it says nothing readable.
     */
    static long deadline(String metadata, String writer) {
        if (metadata == null) {
            return 0L;
        }
        String[] fields = metadata.trim().split(" ");
        if (fields.length != 2 || !fields[0].equals(writer)) {
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
        try {
            if (retired()) {
                return;
            }
            boolean expired = System.currentTimeMillis() > until.get();
            if (expired && !aborted) {
                aborted = true;
                int closed = Producers.abort(flow);
                LOG.warn("flow {}: fenced: {} no longer holds the flow's lease (group {}); {} producer(s) of this "
                    + "executor closed, records they held unsent are dropped, nothing more is sent from here",
                    flow, writer, group, closed);
            } else if (!expired) {
                aborted = false;
            }
            if (aborted) {
                String late = Fences.takeLate(flow);
                if (late != null) {
                    LOG.warn("flow {}: records acknowledged after this executor's lease deadline (the new writer may "
                        + "have copied them too; `mirrorspark audit` counts copies on the target): {}", flow, late);
                }
            }
            if (reading.compareAndSet(false, true)) {  // one read at a time, never blocking this thread
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().whenComplete((offsets, e) -> {
                    try {
                        deadline(offsets, e);
                    } finally {
                        reading.set(false);
                    }
                });
            }
        } catch (Throwable t) {  // the round must go on: a watch that stops would fence its flow for good
            LOG.warn("flow {}: lease watch round failed: {}", flow, t.toString());
        }
    }

    /** No writer used this watch for {@link #IDLE_MS}: it is removed, its admin client closed. */
    private boolean retired() {
        if (users.get() > 0 || System.currentTimeMillis() - usedAt <= IDLE_MS) {
            return false;
        }
        boolean[] removed = {false};
        WATCHES.computeIfPresent(key, (k, w) -> {
            if (w == this && users.get() == 0) {  // under the map's lock: acquire cannot add a user meanwhile
                removed[0] = true;
                return null;
            }
            return w;
        });
        if (removed[0]) {
            schedule.cancel(false);
            admin.close(Duration.ofSeconds(1));
        }
        return removed[0];
    }

    private void deadline(Map<TopicPartition, OffsetAndMetadata> committed, Throwable failure) {
        if (failure == null) {
            OffsetAndMetadata lease = committed.get(new TopicPartition(TOPIC, 0));
            until.set(deadline(lease == null ? null : lease.metadata(), writer));
            failureLoggedAt = 0L;
            return;
        }
        long now = System.currentTimeMillis();  // no answer: the deadline runs out by itself
        if (now - failureLoggedAt >= FAILURE_LOG_EVERY_MS) {
            failureLoggedAt = now;
            Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
            if (cause instanceof AuthorizationException) {
                LOG.warn("flow {}: this executor may not read the lease group {} on the target ({}): it cannot know "
                    + "whether it still writes the flow, and sends nothing. Grant the target principal DESCRIBE on "
                    + "group {} and on topic {}", flow, group, cause.getMessage(), group, TOPIC);
            } else {
                LOG.warn("flow {}: the lease group {} on the target does not answer this executor ({}): its writes "
                    + "stop when the last deadline read passes", flow, group, cause.toString());
            }
        }
    }
}
