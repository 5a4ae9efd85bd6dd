package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The source consumers' settings by mode, without brokers or Spark. */
final class ConsumerPoolTest {

    @Test
    void fetchWaitIsCapped() {
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait(null), "unset: the cap");
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait("500"), "Kafka's default is capped");
        assertEquals(5L, ConsumerPool.fetchWait(" 5 "), "a shorter wait is kept");
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait("soon"), "not a number: the cap");
    }

    @Test
    void aMicroBatchConsumerKeepsThePollSizeAndCapsTheWait() {
        Map<String, Object> config = ConsumerPool.config(
            Map.of("group.id", "g", "max.poll.records", "500", "fetch.max.wait.ms", "500"), false);
        assertEquals("500", config.get("max.poll.records"));
        assertEquals(String.valueOf(ConsumerPool.FETCH_WAIT_CAP_MS), config.get("fetch.max.wait.ms"));
        assertFalse(config.containsKey("group.id"), "a task's consumer has no group");
    }

    @Test
    void aRealTimeConsumerHandsOverAllItFetchedAndKeepsTheUsersWait() {
        // A poll of 500 left a busy partition's records buffered: the next fetch left it out and waited at
        // the broker for the caught-up ones, so a partition still behind got one fetch per wait.
        Map<String, Object> config = ConsumerPool.config(
            Map.of("max.poll.records", "500", "fetch.max.wait.ms", "500"), true);
        assertEquals(String.valueOf(Integer.MAX_VALUE), config.get("max.poll.records"));
        assertEquals("500", config.get("fetch.max.wait.ms"), "the user's wait: a fetch answers when a record comes");
        assertEquals("none", config.get("auto.offset.reset"));
    }
}
