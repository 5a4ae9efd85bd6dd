"""Data integrity: source records that can no longer be read (loss), resuming an interrupted
batch from what the target already holds, and auditing source against target."""
