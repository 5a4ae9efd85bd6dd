package io.mirrorspark.schema;

import java.io.IOException;

/**
 * A record's schema id is not in the flow's map: the batch fails before the record is sent, and the
 * driver reads the id from this message ({@code schema id N}), copies that schema to the target's
 * registry and runs the batch again (ADR 0028).
 */
public final class UnknownSchemaIdException extends IOException {
    private static final long serialVersionUID = 1L;

    public UnknownSchemaIdException(String flow, String topic, int partition, long upstream, int id) {
        super("flow " + flow + ": schema id " + id + " of a record of " + topic + "[" + partition
            + "] (source offset " + upstream + ") is not in the flow's schema id map");
    }
}
