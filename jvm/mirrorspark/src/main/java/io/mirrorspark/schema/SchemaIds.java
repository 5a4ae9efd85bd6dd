package io.mirrorspark.schema;

import java.io.Serializable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;

/**
 * A flow's source -> target schema id map, applied to keys and values in the Confluent wire format:
 * a magic byte (0), a 4-byte big-endian schema id, then the payload (Avro binary; Protobuf's message
 * indexes and payload; JSON Schema's JSON). Only the id changes; everything after it is kept byte for
 * byte. The driver fills the map before a batch (ADR 0028); an id it does not hold fails the batch
 * before anything is sent, so the driver can sync that schema first and run the batch again.
 */
public final class SchemaIds implements Serializable {
    private static final long serialVersionUID = 1L;
    static final byte MAGIC = 0;
    static final int PREFIX = 5;

    private final HashMap<Integer, Integer> ids;
    /** Ids neither registry knows, copied unchanged ({@code mirrorspark.schemas.unresolved = copy}): counted. */
    private final HashSet<Integer> unresolved;

    private SchemaIds(HashMap<Integer, Integer> ids, HashSet<Integer> unresolved) {
        this.ids = ids;
        this.unresolved = unresolved;
    }

    /**
     * The map from the sink's {@code schemaIds} option: {@code source:target} pairs, comma separated;
     * {@code source:?} keeps an id neither registry knows, and its records are counted ({@link #unresolved}).
     */
    public static SchemaIds parse(String option) {
        HashMap<Integer, Integer> ids = new HashMap<>();
        HashSet<Integer> unresolved = new HashSet<>();
        if (option != null && !option.isBlank()) {
            for (String pair : option.split(",")) {
                String[] parts = pair.trim().split(":");
                if (parts.length != 2) {
                    throw new IllegalArgumentException("schemaIds: expected source:target, got '" + pair + "'");
                }
                try {
                    int source = Integer.parseInt(parts[0].trim());
                    if (parts[1].trim().equals("?")) {
                        unresolved.add(source);
                        ids.put(source, source);
                    } else {
                        ids.put(source, Integer.parseInt(parts[1].trim()));
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("schemaIds: not a pair of ids: '" + pair + "'", e);
                }
            }
        }
        return new SchemaIds(ids, unresolved);
    }

    /** True when {@code data} is in the wire format with an id neither registry knows (copied unchanged). */
    public boolean unresolved(byte[] data) {
        return !unresolved.isEmpty() && framed(data) && unresolved.contains(idOf(data));
    }

    /** True when {@code data} is in the wire format: the magic byte and room for an id. */
    public static boolean framed(byte[] data) {
        return data != null && data.length >= PREFIX && data[0] == MAGIC;
    }

    /** The schema id of framed {@code data}. */
    public static int idOf(byte[] data) {
        return ((data[1] & 0xff) << 24) | ((data[2] & 0xff) << 16) | ((data[3] & 0xff) << 8) | (data[4] & 0xff);
    }

    /**
     * {@code data} with its schema id replaced by the target's; {@code data} itself when not in the
     * wire format, or when the id is the same on both sides.
     *
     * @throws UnknownSchemaId when the map holds no target id for the record's id
     */
    public byte[] rewrite(byte[] data) throws UnknownSchemaId {
        if (!framed(data)) {
            return data;
        }
        int source = idOf(data);
        Integer target = ids.get(source);
        if (target == null) {
            throw new UnknownSchemaId(source);
        }
        if (target == source) {
            return data;
        }
        byte[] out = Arrays.copyOf(data, data.length);
        out[1] = (byte) (target >>> 24);
        out[2] = (byte) (target >>> 16);
        out[3] = (byte) (target >>> 8);
        out[4] = (byte) target.intValue();
        return out;
    }

    /** How many ids the map holds. */
    public int size() {
        return ids.size();
    }

    /** A record's schema id that the flow's map does not hold (yet). */
    public static final class UnknownSchemaId extends Exception {
        private static final long serialVersionUID = 1L;
        private final int id;

        UnknownSchemaId(int id) {
            super("schema id " + id + " is not in the flow's schema id map");
            this.id = id;
        }

        public int id() {
            return id;
        }
    }
}
