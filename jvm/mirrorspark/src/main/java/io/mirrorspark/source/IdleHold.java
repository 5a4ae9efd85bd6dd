package io.mirrorspark.source;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.kafka.common.TopicPartition;

/**
 * Why: an idle flow still receives heartbeats (one record a second per cluster pair, as MM2 emits
 * them), and every record would otherwise start a micro-batch of its own, whose fixed cost (offset
 * and commit logs, planning, one job) is what an idle flow spends. While nothing but the held topics
 * (heartbeats) has new records, their new ends are held back for up to {@code holdMs}; the first
 * record of any other topic, or the end of the wait, starts one batch that carries them all. Nothing
 * is skipped: a held end is only reported later.
 */
final class IdleHold {
    private final Pattern held;
    private final long holdMs;
    // Each topic's answer, matched once: a regex per partition on every check was a visible part of an idle
    // query's stream thread at 10,000 partitions (ADR 0027 section 14). Names the listing drops stay: a few bytes each.
    private final Map<String, Boolean> matched = new HashMap<>();
    private long since = -1;  // when the held topics first had records no batch carried; -1: none waiting
    private boolean heldOnly;  // the last apply reported held ends alone moving (their wait over)

    IdleHold(String heldPattern, long holdMs) {
        this.held = heldPattern == null || heldPattern.isEmpty() ? null : Pattern.compile(heldPattern);
        this.holdMs = holdMs;
    }

    /** True when held ends are waiting and their wait is over: the driver must look again now. */
    boolean due(long now) {
        return since >= 0 && now - since >= holdMs;
    }

    /** Milliseconds from {@code now} until held ends are due; Long.MAX_VALUE when none wait. */
    long dueIn(long now) {
        return since < 0 ? Long.MAX_VALUE : Math.max(0L, since + holdMs - now);
    }

    private boolean isHeld(String topic) {
        return matched.computeIfAbsent(topic, t -> held.matcher(t).matches());
    }

    /**
     * True when the last {@link #apply} let a batch start for held topics alone (their wait over), no
     * other partition moved, added or gone: an end watcher armed for the others may keep watching.
     */
    boolean heldOnly() {
        return heldOnly;
    }

    /** The held topics' partitions of {@code partitions}; empty when nothing is held. */
    List<TopicPartition> held(Collection<TopicPartition> partitions) {
        List<TopicPartition> out = new ArrayList<>();
        if (held != null && holdMs > 0) {
            for (TopicPartition tp : partitions) {
                if (isHeld(tp.topic())) {
                    out.add(tp);
                }
            }
        }
        return out;
    }

    /** {@code ends} without the held topics: what must start a batch at once. */
    Map<TopicPartition, Long> unheld(Map<TopicPartition, Long> ends) {
        if (held == null || holdMs <= 0) {
            return ends;
        }
        Map<TopicPartition, Long> out = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (!isHeld(e.getKey().topic())) {
                out.put(e.getKey(), e.getValue());
            }
        }
        return out;
    }

    /** The ends to report at {@code now}: {@code latest}, or the held topics kept at {@code start}. */
    Map<TopicPartition, Long> apply(Map<TopicPartition, Long> start, Map<TopicPartition, Long> latest, long now) {
        heldOnly = false;
        if (held == null || holdMs <= 0) {
            return latest;
        }
        boolean heldMoved = false;
        for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
            boolean moved = !e.getValue().equals(start.get(e.getKey()));
            if (!moved) {
                continue;
            }
            if (!isHeld(e.getKey().topic())) {
                since = -1;
                return latest;  // real records: a batch now, the held ones with it
            }
            heldMoved = true;
        }
        for (TopicPartition tp : start.keySet()) {
            if (!latest.containsKey(tp)) {
                since = -1;
                return latest;  // a partition went away: the batch reports it
            }
        }
        if (!heldMoved) {
            since = -1;
            return latest;
        }
        if (since < 0) {
            since = now;
        }
        if (now - since >= holdMs) {
            since = -1;
            heldOnly = true;
            return latest;
        }
        Map<TopicPartition, Long> kept = new HashMap<>(latest);
        for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
            if (isHeld(e.getKey().topic())) {
                Long before = start.get(e.getKey());
                if (before == null) {
                    kept.remove(e.getKey());
                } else {
                    kept.put(e.getKey(), before);
                }
            }
        }
        return kept;
    }
}
