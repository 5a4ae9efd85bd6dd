package com.example.mm2;

import java.util.Map;

import org.apache.kafka.connect.mirror.ConfigPropertyFilter;
import org.apache.kafka.connect.mirror.GroupFilter;
import org.apache.kafka.connect.mirror.TopicFilter;

/** A test filter for topics, groups and topic configs: names starting with "keep" (or the configured prefix). */
public class KeepFilter implements TopicFilter, GroupFilter, ConfigPropertyFilter {
    private String keep = "keep";

    @Override
    public void configure(Map<String, ?> props) {
        Object configured = props.get("keep.filter.prefix");
        if (configured != null) {
            keep = configured.toString();
        }
    }

    @Override
    public boolean shouldReplicateTopic(String topic) {
        return topic.startsWith(keep);
    }

    @Override
    public boolean shouldReplicateGroup(String group) {
        return group.startsWith(keep);
    }

    @Override
    public boolean shouldReplicateConfigProperty(String prop) {
        return !prop.equals("retention.ms");
    }

    @Override
    public void close() {
    }
}
