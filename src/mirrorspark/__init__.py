"""mirrorspark: Kafka replication (MirrorMaker 2 compatible) on Apache Spark."""
