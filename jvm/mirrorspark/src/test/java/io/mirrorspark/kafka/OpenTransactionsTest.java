package io.mirrorspark.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.junit.jupiter.api.Test;

/** Which of the target's transactions a new writer of a flow fences. */
final class OpenTransactionsTest {

    @Test
    void onlyTheFlowsUnfinishedTransactionsAreFenced() {
        String prefix = "mirrorspark-a->b-#task-";
        List<TransactionListing> listed = List.of(
            new TransactionListing(prefix + "1", 11L, TransactionState.ONGOING),
            new TransactionListing(prefix + "0", 10L, TransactionState.PREPARE_COMMIT),
            new TransactionListing(prefix + "2", 12L, TransactionState.COMPLETE_COMMIT),
            new TransactionListing(prefix + "3", 13L, TransactionState.EMPTY),
            new TransactionListing("mirrorspark-a->b-2-#task-0", 20L, TransactionState.ONGOING),
            new TransactionListing("someone-else", 30L, TransactionState.ONGOING));
        assertEquals(List.of(prefix + "0", prefix + "1"), OpenTransactions.openUnder(listed, prefix),
            "finished ones can commit nothing more; another flow's (a->b-2) and other ids are not this flow's");
    }
}
