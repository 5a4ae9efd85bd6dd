package com.example.mm2;

import java.util.Map;

import org.apache.kafka.connect.mirror.TopicFilter;

/** A test filter whose configure throws, as a misconfigured plug-in does. */
public class Broken implements TopicFilter {
    @Override
    public void configure(Map<String, ?> props) {
        throw new IllegalArgumentException("broken.setting is required");
    }

    @Override
    public boolean shouldReplicateTopic(String topic) {
        return true;
    }
}
