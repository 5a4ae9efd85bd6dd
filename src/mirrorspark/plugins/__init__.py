"""MM2's Java plug-ins (ReplicationPolicy, TopicFilter, GroupFilter, ConfigPropertyFilter) loaded from
the user's jars and used where MM2 uses them: the control plane asks them through a small JVM of its own."""
