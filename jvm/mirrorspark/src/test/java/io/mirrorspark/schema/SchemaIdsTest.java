package io.mirrorspark.schema;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The wire format's id is rewritten and nothing else: an Avro payload, Protobuf's message indexes
 * after the id, records not in the format, an id the map does not hold, a bad option.
 */
final class SchemaIdsTest {

    private static byte[] framed(int id, byte... payload) {
        byte[] out = new byte[5 + payload.length];
        out[0] = 0;
        out[1] = (byte) (id >>> 24);
        out[2] = (byte) (id >>> 16);
        out[3] = (byte) (id >>> 8);
        out[4] = (byte) id;
        System.arraycopy(payload, 0, out, 5, payload.length);
        return out;
    }

    @Test
    void theIdIsReplacedAndThePayloadKeptByteForByte() throws Exception {
        SchemaIds ids = SchemaIds.parse("1:7, 300:70000");
        assertEquals(2, ids.size());
        byte[] avro = framed(1, (byte) 0x06, (byte) 'a', (byte) 'b', (byte) 'c');
        assertArrayEquals(framed(7, (byte) 0x06, (byte) 'a', (byte) 'b', (byte) 'c'), ids.rewrite(avro));
        assertEquals(1, SchemaIds.idOf(avro), "the source record is not changed");
        // Protobuf: message indexes (here [1, 0] as zig-zag varints: count 2, then 2, 0) follow the id.
        byte[] protobuf = framed(300, (byte) 4, (byte) 2, (byte) 0, (byte) 0x08, (byte) 0x96, (byte) 0x01);
        byte[] rewritten = ids.rewrite(protobuf);
        assertEquals(70000, SchemaIds.idOf(rewritten));
        assertArrayEquals(java.util.Arrays.copyOfRange(protobuf, 5, protobuf.length),
            java.util.Arrays.copyOfRange(rewritten, 5, rewritten.length));
    }

    @Test
    void recordsNotInTheWireFormatPassUntouched() throws Exception {
        SchemaIds ids = SchemaIds.parse("");
        byte[] json = "{\"a\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertSame(json, ids.rewrite(json));
        byte[] tooShort = {0, 0, 0, 1};
        assertSame(tooShort, ids.rewrite(tooShort));
        assertFalse(SchemaIds.framed(null));
        assertTrue(SchemaIds.framed(framed(9)), "an empty payload after the id is still framed");
        assertSame(null, ids.rewrite(null));
    }

    @Test
    void anIdTheMapDoesNotHoldFailsBeforeAnythingIsSent() {
        SchemaIds ids = SchemaIds.parse("1:7");
        SchemaIds.UnknownSchemaId unknown = assertThrows(SchemaIds.UnknownSchemaId.class, () -> ids.rewrite(framed(2)));
        assertEquals(2, unknown.id());
        byte[] same = framed(5);
        try {
            assertSame(same, SchemaIds.parse("5:5").rewrite(same), "the same id on both sides: no copy");
        } catch (SchemaIds.UnknownSchemaId e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void anIdNeitherRegistryKnowsIsKeptAndTold() throws Exception {
        SchemaIds ids = SchemaIds.parse("1:7,9:?");
        byte[] unknown = framed(9, (byte) 1);
        assertSame(unknown, ids.rewrite(unknown), "copied unchanged");
        assertTrue(ids.unresolved(unknown), "and counted");
        assertFalse(ids.unresolved(framed(1)), "a mapped id is not");
        assertFalse(ids.unresolved(null));
        assertFalse(SchemaIds.parse("1:7").unresolved(framed(9)), "an id the map lacks is not kept, it fails");
    }

    @Test
    void aBadOptionIsRefusedNamingIt() {
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> SchemaIds.parse("1-7"));
        assertTrue(bad.getMessage().contains("schemaIds"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SchemaIds.parse("a:b"));
    }
}
