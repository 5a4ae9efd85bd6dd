package io.mirrorspark.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WrittenBatchesTest {
    @Test
    void aStoppingRecorderIsWokenOutOfItsLongWait() throws Exception {
        String flow = "wake-test";
        WrittenBatches.resetEpochs(flow);
        long started = System.nanoTime();
        CompletableFuture<Long> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return WrittenBatches.awaitEpoch(flow, 30_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(200);
        WrittenBatches.wake(flow);
        assertEquals(-1L, waiting.get(5, TimeUnit.SECONDS));
        assertTrue((System.nanoTime() - started) / 1_000_000 < 5_000, "the wait was not cut short");
    }

    @Test
    void aWakeBeforeTheWaitEndsTheNextWaitOnceAndANewQueryForgetsIt() throws Exception {
        String flow = "wake-before";
        WrittenBatches.resetEpochs(flow);
        WrittenBatches.wake(flow);
        long started = System.nanoTime();
        assertEquals(-1L, WrittenBatches.awaitEpoch(flow, 30_000));
        assertTrue((System.nanoTime() - started) / 1_000_000 < 1_000);
        started = System.nanoTime();
        assertEquals(-1L, WrittenBatches.awaitEpoch(flow, 300));  // the wake was used up: a whole wait
        assertTrue((System.nanoTime() - started) / 1_000_000 >= 250);
        WrittenBatches.wake(flow);
        WrittenBatches.resetEpochs(flow);  // a new query of the flow: the old recorder's wake is not its own
        started = System.nanoTime();
        assertEquals(-1L, WrittenBatches.awaitEpoch(flow, 300));
        assertTrue((System.nanoTime() - started) / 1_000_000 >= 250);
    }
}
