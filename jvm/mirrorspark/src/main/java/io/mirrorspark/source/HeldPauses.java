package io.mirrorspark.source;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * Real-time mode's counterpart of {@link IdleHold}. Why: an idle flow's only records are heartbeats,
 * one a second per cluster pair, and each woke the task's consumer and the sink's producer for one
 * record, their rounds walking every partition of the group (at 3,000 partitions about as much CPU as
 * the rest of an idle minute; ADR 0027 section 15). When a poll brings records of the held topics
 * alone, those partitions are forwarded at once and then paused for {@code holdMs}, so the heartbeats
 * that follow come in one fetch; a record of any other topic resumes them at once. Nothing is skipped
 * or reordered: a paused partition keeps its position, and a batch's end reports it as it stands.
 */
final class HeldPauses {
    private final IdleHold topics;
    private final long holdMs;
    private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();

    HeldPauses(String heldPattern, long holdMs) {
        this.topics = new IdleHold(heldPattern, holdMs);
        this.holdMs = holdMs;
    }

    /** After a poll that brought records of {@code got}: held alone, they pause; anything else resumes them. */
    void polled(Consumer<?, ?> consumer, Set<TopicPartition> got, long now) {
        if (got.isEmpty()) {
            return;
        }
        List<TopicPartition> held = topics.held(got);
        if (held.size() < got.size()) {  // other records: the held ones come with them, as a micro-batch takes them
            resume(consumer, new ArrayList<>(pausedUntil.keySet()));
            return;
        }
        List<TopicPartition> fresh = new ArrayList<>();
        for (TopicPartition tp : held) {
            if (pausedUntil.put(tp, now + holdMs) == null) {
                fresh.add(tp);
            }
        }
        consumer.pause(fresh);
    }

    /** Before a poll: the partitions whose hold is over are fetched again. */
    void due(Consumer<?, ?> consumer, long now) {
        List<TopicPartition> over = new ArrayList<>();
        pausedUntil.forEach((tp, at) -> {
            if (at <= now) {
                over.add(tp);
            }
        });
        resume(consumer, over);
    }

    /** {@code waitMs}, or less: until the first hold ends. */
    long wait(long waitMs, long now) {
        long out = waitMs;
        for (long at : pausedUntil.values()) {
            out = Math.min(out, Math.max(0L, at - now));
        }
        return out;
    }

    /** Held now: paused on purpose, neither stalled nor done. */
    Collection<TopicPartition> holding() {
        return pausedUntil.keySet();
    }

    /** {@code tp} is given up: it stays paused for another reason, never resumed here. */
    void forget(TopicPartition tp) {
        pausedUntil.remove(tp);
    }

    private void resume(Consumer<?, ?> consumer, List<TopicPartition> partitions) {
        if (partitions.isEmpty()) {
            return;
        }
        partitions.forEach(pausedUntil::remove);
        consumer.resume(partitions);
    }
}
