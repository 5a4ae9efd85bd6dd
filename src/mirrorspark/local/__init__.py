"""Real single-node Apache Kafka clusters (KRaft combined mode) on 127.0.0.1, for demos and tests."""
from mirrorspark.local.cluster import ClusterSpec, LocalClusterError, LocalClusters, RunningCluster

__all__ = ["ClusterSpec", "LocalClusterError", "LocalClusters", "RunningCluster"]
