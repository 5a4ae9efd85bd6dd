package io.mirrorspark.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutionException;
import javax.security.auth.login.LoginException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

class ClientErrorTest {
    @Test
    void refusalsKeepKafkasProtocolCodes() {
        assertEquals(3, ClientError.of("x", new ExecutionException(new UnknownTopicOrPartitionException("gone"))).code());
        assertEquals(36, ClientError.of("x", new TopicExistsException("there")).code());
        assertEquals(54, ClientError.of("x", new SecurityDisabledException("no authorizer")).code());
        assertEquals(-1, ClientError.of("x", new IllegalStateException("?")).code());
    }

    @Test
    void timeoutsAndLoginsTakeTheClientCodes() {
        ClientError timedOut = ClientError.of("listing topics", new ExecutionException(new TimeoutException("late")));
        assertEquals(ClientError.TIMED_OUT, timedOut.code());
        assertTrue(timedOut.retriable());
        assertTrue(timedOut.getMessage().startsWith("listing topics: "), timedOut.getMessage());
        ClientError refused = ClientError.of("x", new SaslAuthenticationException("bad password"));
        assertEquals(ClientError.AUTHENTICATION, refused.code());
        assertFalse(refused.retriable());
        // A keytab that cannot log in fails the client's construction, the LoginException underneath.
        ClientError keytab = ClientError.of("creating an admin client",
            new KafkaException("Failed to create new KafkaAdminClient", new KafkaException(new LoginException("no key"))));
        assertEquals(ClientError.AUTHENTICATION, keytab.code());
        assertTrue(keytab.getMessage().contains("LoginException: no key"), keytab.getMessage());
    }
}
