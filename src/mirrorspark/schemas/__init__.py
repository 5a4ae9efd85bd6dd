"""Schemas moving with the data: subjects copied to the target's registry and record ids rewritten (ADR 0028)."""
