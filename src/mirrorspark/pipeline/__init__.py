"""Data plane: one Spark Structured Streaming query per enabled flow, records kept on the JVM."""
