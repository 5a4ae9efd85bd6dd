package io.mirrorspark.kafka;

import java.util.HashMap;
import java.util.Map;

/**
 * The connection part of a client's settings (servers, TLS, SASL, config providers): what a
 * consumer or admin client the sink opens beside its producer needs to reach the same cluster,
 * without the producer's own tuning.
 */
public final class ConnectionSettings {
    private ConnectionSettings() {
    }

    /** The settings of {@code client} that say how to connect, as a client config map. */
    public static Map<String, Object> of(Map<String, String> client) {
        Map<String, Object> conf = new HashMap<>();
        for (Map.Entry<String, String> e : client.entrySet()) {
            String k = e.getKey();
            if (k.equals("bootstrap.servers") || k.startsWith("security.") || k.startsWith("ssl.")
                || k.startsWith("sasl.") || k.startsWith("config.providers") || k.equals("client.dns.lookup")) {
                conf.put(k, e.getValue());
            }
        }
        return conf;
    }
}
