"""Control plane: admin operations on source and target clusters (confluent-kafka)."""
