"""Exactly-once progress committed for other topic ids is not a takeover's resume point."""
from __future__ import annotations

import pytest

from mirrorspark.control.transactions import progress_holds


@pytest.mark.parametrize(("metadata", "now", "holds"), [
    ("ms2;S1|R1;10:20:5", ("S1", "R1"), True),
    ("ms2;S0|R1;10:20:5", ("S1", "R1"), False),  # the source topic was re-created since
    ("ms2p;S1|R0;10:20:5", ("S1", "R1"), False),  # the remote topic was re-created since
    ("ms2;|;10:20:5", ("S1", "R1"), True),  # committed before the ids were known
    ("ms1;10:20:5", ("S1", "R1"), True),  # the older format says nothing against it
    ("", ("S1", "R1"), True),
    ("ms2;S0|R1;", None, True),  # ids not known now
])
def test_progress_holds_only_for_the_topics_it_was_committed_for(metadata, now, holds):
    assert progress_holds(metadata, now) is holds
