"""Whole-flow cutover: moving producers and every consumer group of a flow from its source cluster to
its target at once (``mirrorspark promote``), which MM2 leaves to the operator, group by group.

A cutover changes where a business writes; nothing of it starts before every fact it relies on has
been checked (``preflight``): a check that fails names what to fix, so the operator fixes it before
anything is changed, not halfway through.
"""
