package io.mirrorspark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The source consumers' fetch wait, without brokers or Spark. */
final class ConsumerPoolTest {

    @Test
    void fetchWaitIsCapped() {
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait(null), "unset: the cap");
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait("500"), "Kafka's default is capped");
        assertEquals(5L, ConsumerPool.fetchWait(" 5 "), "a shorter wait is kept");
        assertEquals(ConsumerPool.FETCH_WAIT_CAP_MS, ConsumerPool.fetchWait("soon"), "not a number: the cap");
    }
}
