package io.mirrorspark.kafka;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FenceProducersOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;

/**
 * The transactions a flow's earlier writers left open on the target, and their fencing. A flow's
 * transactional ids follow its task layout (one per task), which another instance or an earlier
 * start may have laid out differently: a new writer cannot know which ids a stopped or stalled
 * writer held, so it lists the target's open transactions under the flow's prefix and fences each
 * (the broker aborts what it left open and refuses it from then on), as Connect fences a
 * connector's earlier task generation before its new tasks write.
 */
public final class OpenTransactions {
    /** States in which a transaction is not finished: its holder could still commit it. */
    private static final Set<TransactionState> OPEN = Set.of(TransactionState.ONGOING,
        TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT, TransactionState.PREPARE_EPOCH_FENCE);

    private OpenTransactions() {
    }

    /** The ids of {@code listings} that start with {@code prefix} and are not finished, sorted. */
    public static List<String> openUnder(Collection<TransactionListing> listings, String prefix) {
        List<String> open = new ArrayList<>();
        for (TransactionListing listing : listings) {
            if (listing.transactionalId().startsWith(prefix) && OPEN.contains(listing.state())) {
                open.add(listing.transactionalId());
            }
        }
        open.sort(null);
        return open;
    }

    /**
     * Fences every transactional id under {@code prefix} whose transaction is open on the target, and
     * returns them. A failure names what was asked; the caller decides whether it may be retried.
     */
    public static List<String> fence(Admin admin, String prefix, long timeoutMs)
        throws ExecutionException, TimeoutException, InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Collection<TransactionListing> listed = admin.listTransactions(new ListTransactionsOptions()
            .timeoutMs((int) Math.min(Integer.MAX_VALUE, timeoutMs))).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        List<String> open = openUnder(listed, prefix);
        if (!open.isEmpty()) {
            long left = Math.max(1L, deadline - System.currentTimeMillis());
            admin.fenceProducers(open, new FenceProducersOptions().timeoutMs((int) Math.min(Integer.MAX_VALUE, left)))
                .all().get(left, TimeUnit.MILLISECONDS);
        }
        return open;
    }
}
