package io.mirrorspark.control;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.protocol.Errors;

/**
 * A Kafka client call of the control plane that failed, with the error code Python's side knows it
 * by. The codes are Kafka's protocol error codes (librdkafka uses the same numbers), so the code
 * that reads an answer judges a refusal the same whichever client asked; the failures only a client
 * has (it timed out, it could not log in) take librdkafka's local codes.
 */
public final class ClientError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** librdkafka's local code of an operation that timed out. */
    public static final int TIMED_OUT = -185;
    /** librdkafka's local code of a failed login (SASL, TLS handshake). */
    public static final int AUTHENTICATION = -169;

    private final int code;
    private final boolean retriable;

    public ClientError(int code, boolean retriable, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.retriable = retriable;
    }

    /** ``what`` failed with ``error``: its code and whether a retry may help. */
    public static ClientError of(String what, Throwable error) {
        Throwable cause = unwrap(error);
        Throwable root = cause;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = what + ": " + cause + (root == cause ? "" : " (" + root + ")");
        return new ClientError(codeOf(cause), cause instanceof RetriableException, text, cause);
    }

    public int code() {
        return code;
    }

    public boolean retriable() {
        return retriable;
    }

    /** The failure behind a future's wrapper. */
    static Throwable unwrap(Throwable error) {
        Throwable at = error;
        while ((at instanceof ExecutionException || at instanceof CompletionException) && at.getCause() != null) {
            at = at.getCause();
        }
        return at;
    }

    static int codeOf(Throwable error) {
        Throwable cause = unwrap(error);
        if (cause instanceof TimeoutException || cause instanceof java.util.concurrent.TimeoutException) {
            return TIMED_OUT;
        }
        for (Throwable at = cause; at != null; at = at.getCause() == at ? null : at.getCause()) {
            if (at instanceof AuthenticationException || at instanceof javax.security.auth.login.LoginException) {
                return AUTHENTICATION;  // a login refused, or one that could not start (a keytab, a handler)
            }
        }
        return Errors.forException(cause).code();
    }
}
