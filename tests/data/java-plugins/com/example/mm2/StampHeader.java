package com.example.mm2;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;

/** A test transformation as MM2 users write them: each record gets header {@code header} = {@code value}. */
public class StampHeader<R extends ConnectRecord<R>> implements Transformation<R> {
    private String header = "stamp";
    private String value = "";

    @Override
    public void configure(Map<String, ?> props) {
        Object name = props.get("header");
        if (name != null) {
            header = name.toString();
        }
        Object stamp = props.get("value");
        if (stamp != null) {
            value = stamp.toString();
        }
    }

    @Override
    public R apply(R record) {
        R copy = record.newRecord(record.topic(), record.kafkaPartition(), record.keySchema(), record.key(),
            record.valueSchema(), record.value(), record.timestamp(), record.headers().duplicate());
        // Bytes, as MM2's ByteArrayConverter writes headers (a String header would fail there, as here).
        copy.headers().addBytes(header, value.getBytes(StandardCharsets.UTF_8));
        return copy;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
            .define("header", ConfigDef.Type.STRING, "stamp", ConfigDef.Importance.HIGH, "the header's name")
            .define("value", ConfigDef.Type.STRING, "", ConfigDef.Importance.HIGH, "the header's value");
    }

    @Override
    public void close() {
    }
}
