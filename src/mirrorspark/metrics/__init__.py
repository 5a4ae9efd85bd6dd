"""Prometheus metrics: MM2's per-partition replication figures, plus lag and re-copies MM2 lacks."""
