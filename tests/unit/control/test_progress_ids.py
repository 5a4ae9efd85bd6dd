"""Exactly-once progress committed for other topic ids is not a takeover's resume point."""
from __future__ import annotations

import pytest

from mirrorspark.control.transactions import progress_holds

# Kafka topic ids as Kafka prints them (22 characters of url-safe base64).
S0, S1, R0, R1 = "S0" + "a" * 20, "S1" + "a" * 20, "R0" + "b" * 20, "R1" + "b" * 20


@pytest.mark.parametrize(("metadata", "now", "holds"), [
    (f"ms2;{S1}|{R1};10:20:5", (S1, R1), True),
    (f"ms2;{S0}|{R1};10:20:5", (S1, R1), False),  # the source topic was re-created since
    (f"ms2p;{S1}|{R0};10:20:5", (S1, R1), False),  # the remote topic was re-created since
    ("ms2;|;10:20:5", (S1, R1), True),  # committed before the ids were known
    ("ms1;10:20:5", (S1, R1), True),  # the older format says nothing against it
    ("", (S1, R1), True),
    (f"ms2;{S0}|{R1};", None, True),  # ids not known now
    ("ms2;" + "A" * 22 + "|" + "B" * 22 + ";10:20:5\x07\x91z", ("A" * 22, "B" * 22), True),  # read past its end
    ("ms2;" + "A" * 22 + "|" + "C" * 22 + ";10:20:5\x07", ("A" * 22, "B" * 22), False),
    ("ms2;" + "A" * 22 + "|" + "C" * 22 + "zz", ("A" * 22, "B" * 22), True),  # the ids not closed: not all read
    ("ms2;" + "A" * 22 + "|" + "C" * 21 + "\u0500;", ("A" * 22, "B" * 22), True),  # not an id's shape
])
def test_progress_holds_only_for_the_topics_it_was_committed_for(metadata, now, holds):
    assert progress_holds(metadata, now) is holds
