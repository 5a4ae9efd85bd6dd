package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

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

    @Test
    void aRealTimeConsumerWithoutTheUsersWaitWaitsLongAtTheBrokerUnderHalfTheRequestTimeout() {
        // An idle round walks every assigned partition in the client; a record still answers the fetch at once.
        assertEquals(String.valueOf(ConsumerPool.REAL_TIME_FETCH_WAIT_MS),
            ConsumerPool.config(Map.of("bootstrap.servers", "b:9092"), true).get("fetch.max.wait.ms"));
        assertEquals("4000", ConsumerPool.config(Map.of("request.timeout.ms", "8000"), true).get("fetch.max.wait.ms"),
            "under half the request timeout");
        assertEquals(ConsumerPool.REAL_TIME_FETCH_WAIT_MS, ConsumerPool.realTimeFetchWait("soon"),
            "not a number: the consumer refuses it itself");
        assertEquals(String.valueOf(ConsumerPool.FETCH_WAIT_CAP_MS),
            ConsumerPool.config(Map.of("bootstrap.servers", "b:9092"), false).get("fetch.max.wait.ms"),
            "a micro-batch consumer keeps the cap");
    }

    @Test
    void aRealTimeTaskGetsBackTheConsumerThatReadItsPartitions() {
        // Its fetch in flight is for those partitions: another group's consumer would hold the task back until
        // that fetch's wait at the broker ended.
        Map<String, String> settings = Map.of("client.id", "sticky-" + System.nanoTime());
        Set<TopicPartition> first = Set.of(new TopicPartition("t", 0), new TopicPartition("t", 2));
        Set<TopicPartition> second = Set.of(new TopicPartition("t", 1), new TopicPartition("t", 3));
        MockConsumer<byte[], byte[]> a = assignedTo(first);
        MockConsumer<byte[], byte[]> b = assignedTo(second);
        ConsumerPool.release(settings, true, a, false);
        ConsumerPool.release(settings, true, b, false);
        assertEquals(first, a.assignment(), "a real-time consumer keeps its assignment in the pool");
        assertSame(a, ConsumerPool.acquire(settings, true, first), "not the most recent one: the one of these");
        assertSame(b, ConsumerPool.acquire(settings, true, Set.of(new TopicPartition("t", 9))),
            "no match: any idle one");
    }

    @Test
    void aMicroBatchConsumerIsUnassignedWhenGivenBack() {
        Map<String, String> settings = Map.of("client.id", "unassigned-" + System.nanoTime());
        Set<TopicPartition> some = Set.of(new TopicPartition("t", 0));
        MockConsumer<byte[], byte[]> c = assignedTo(some);
        ConsumerPool.release(settings, false, c, false);
        assertTrue(c.assignment().isEmpty());
        assertSame(c, ConsumerPool.acquire(settings, false, some));
    }

    private static MockConsumer<byte[], byte[]> assignedTo(Set<TopicPartition> partitions) {
        MockConsumer<byte[], byte[]> c = new MockConsumer<>(OffsetResetStrategy.NONE);
        c.assign(List.copyOf(partitions));
        return c;
    }
}
