"""Offset syncs, checkpoints, translation and consumer-group offset sync (MM2-compatible formats)."""
