package com.example.mm2;

import java.util.Map;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.connect.mirror.ReplicationPolicy;

/** A test policy as MM2 users write them: remote topics are "<prefix><source>__<topic>". */
public class PrefixPolicy implements ReplicationPolicy, Configurable {
    private String prefix = "dc_";

    @Override
    public void configure(Map<String, ?> props) {
        Object configured = props.get("prefix.policy.prefix");
        if (configured != null) {
            prefix = configured.toString();
        }
    }

    @Override
    public String formatRemoteTopic(String sourceClusterAlias, String topic) {
        return prefix + sourceClusterAlias + "__" + topic;
    }

    @Override
    public String topicSource(String topic) {
        if (!topic.startsWith(prefix)) {
            return null;
        }
        int end = topic.indexOf("__", prefix.length());
        return end < 0 ? null : topic.substring(prefix.length(), end);
    }

    @Override
    public String upstreamTopic(String topic) {
        String source = topicSource(topic);
        return source == null ? null : topic.substring(prefix.length() + source.length() + 2);
    }
}
