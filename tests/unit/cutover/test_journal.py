"""The promotion journal: what a killed ``promote`` resumes from and ``--abort`` undoes; and the lock
that keeps a second ``promote`` of the same flow out."""
from __future__ import annotations

import pytest

from mirrorspark.cutover.journal import Journal, Journals, JournalUnreadable
from mirrorspark.cutover.promotion import PromotionRunning, exclusive
from mirrorspark.state.files import LocalFiles


def test_a_journal_reads_back_as_written_and_is_kept_under_a_dated_name_when_closed(tmp_path):
    journals = Journals(LocalFiles(tmp_path))
    journal = Journal(flow="A->B", step="groups", topics=["orders"], groups=["billing"], authorizer=True,
                      acls=["orders"], quiet_ends=[["orders", 0, 42]], before={"billing": [["A.orders", 0, None]]})
    journals.save(journal)
    assert journals.load("A->B") == journal and journals.load("B->A") is None
    kept = journals.close(journal, "done")
    assert journals.load("A->B") is None and kept.startswith("A-to-B-") and kept.endswith("-done.json")
    name, finished = journals.last_finished("A->B")
    assert name == kept and finished.acls == ["orders"]


def test_the_last_finished_promotion_is_the_flows_own_not_a_flow_whose_target_name_extends_it(tmp_path):
    journals = Journals(LocalFiles(tmp_path))
    other = Journal(flow="A->B-east", step="done", acls=["east"])
    journals.save(other)
    journals.close(other, "done")
    aborted = Journal(flow="A->B", step="fence", acls=["orders"])
    journals.save(aborted)
    journals.close(aborted, "aborted")
    assert journals.last_finished("A->B") is None
    assert journals.last_finished("A->B-east")[1].acls == ["east"]


@pytest.mark.parametrize("text", ["{not json", '{"format": 9, "flow": "A->B"}', '{"format": 1, "flow": "A->B", '
                                                                                  '"unknown": 1}'])
def test_a_journal_this_version_did_not_write_is_refused_naming_the_file(tmp_path, text):
    (tmp_path / "A-to-B.json").write_text(text)
    with pytest.raises(JournalUnreadable, match=r"A-to-B\.json"):
        Journals(LocalFiles(tmp_path)).load("A->B")


def test_a_second_promote_of_the_same_flow_is_refused_while_the_first_holds_the_lock(tmp_path):
    with exclusive(tmp_path, "A->B"):
        with pytest.raises(PromotionRunning, match="another `mirrorspark promote` of A->B"), \
                exclusive(tmp_path, "A->B"):
            pass
        with exclusive(tmp_path, "B->A"):  # another flow is not held
            pass
    with exclusive(tmp_path, "A->B"):  # released with the first
        pass


class FakeRest:
    """The REST API of an instance running A->B and B->A, as Rest answers (a 409 as RestUnanswered)."""

    def __init__(self, states: dict[str, str]) -> None:
        self.base = "http://127.0.0.1:1"
        self.states = states
        self.posts: list[str] = []

    def get(self, path: str):
        return [{"name": name, "state": state} for name, state in self.states.items()]

    def post(self, path: str, body=None):
        from mirrorspark.rest.client import RestUnanswered

        self.posts.append(path)
        if path.endswith("/translate"):  # the offset mapping: source offset + 1000, none past offset 500
            return [{**p, "target_offset": p["offset"] + 1000 if p["offset"] <= 500 else None}
                    for p in body["positions"]]
        flow, action = path.removeprefix("/flows/").replace("-%3E", "->").rsplit("/", 1)
        if action == "resume" and self.states[flow] != "paused":
            raise RestUnanswered(f"{self.base}{path} answered 409: flow {flow!r} is not paused")
        self.states[flow] = "paused" if action == "pause" else "running"


def promotion(tmp_path, rest: FakeRest):
    from mirrorspark.config.loader import parse_config
    from mirrorspark.config.properties_file import parse_properties
    from mirrorspark.cutover.gather import promoted_flow
    from mirrorspark.cutover.promotion import Promotion

    config = parse_config(parse_properties("clusters = A, B\nA.bootstrap.servers = a:9092\n"
                                           "B.bootstrap.servers = b:9092\nA->B.enabled = true\nB->A.enabled = true\n"))
    flow, reverse = promoted_flow(config, "A->B")
    return Promotion(config=config, flow=flow, reverse=reverse, rest=rest, journals=Journals(LocalFiles(tmp_path)),
                     losses=None, max_lag=0, quiet_seconds=1.0, timeout=1.0, say=lambda _: None)


def test_the_stop_step_pauses_the_flow_and_resumes_a_paused_reverse_flow_and_abort_resumes_it_again(tmp_path):
    rest = FakeRest({"A->B": "running", "B->A": "paused"})
    journal = Journal(flow="A->B", step="stop")
    promotion(tmp_path, rest)._stop(journal)
    assert rest.states == {"A->B": "paused", "B->A": "running"} and journal.paused
    assert Journals(LocalFiles(tmp_path)).load("A->B").paused  # recorded before the pause was asked
    assert Journals(LocalFiles(tmp_path)).load("A->B").reverse_resumed
    assert promotion(tmp_path, rest).abort(journal) == ["B->A paused again", "A->B resumed"]
    assert rest.states == {"A->B": "running", "B->A": "paused"}  # both as they were


def test_abort_of_a_pause_recorded_but_never_made_is_harmless(tmp_path):
    rest = FakeRest({"A->B": "running", "B->A": "running"})
    assert promotion(tmp_path, rest).abort(Journal(flow="A->B", step="stop", paused=True)) == ["A->B resumed"]
    assert rest.posts == ["/flows/A-%3EB/resume"] and rest.states["A->B"] == "running"


def test_a_journal_written_before_share_groups_reads_with_none_looked_for(tmp_path):
    import json

    files = LocalFiles(tmp_path)
    files.write("A-to-B.json", json.dumps({"format": 1, "flow": "A->B", "step": "groups", "topics": ["t"]}))
    journal = Journals(files).load("A->B")
    assert journal.share_groups is None and journal.share_before == {} and journal.share_committed == {}
    journal.share_groups, journal.share_before = ["s"], {"s": [["A.t", 0, None]]}
    Journals(files).save(journal)
    assert Journals(files).load("A->B") == journal


def test_a_share_group_resumes_at_the_end_only_when_it_acknowledged_everything():
    from mirrorspark.cutover.promotion import share_resume_at

    assert share_resume_at(start=0, lag=0, end=300) == 300  # Kafka's stored start offset lags: lag 0 says all
    assert share_resume_at(start=120, lag=5, end=300) == 120  # acknowledged above 120: delivered again
    assert share_resume_at(start=120, lag=None, end=300) == 120  # a broker that gives no lag


def test_share_group_positions_are_translated_onto_the_remote_topics_or_the_step_stops(tmp_path):
    from mirrorspark.errors import OperationalError

    promoting = promotion(tmp_path, FakeRest({"A->B": "running", "B->A": "running"}))
    assert promoting._translated("s", {("t", 0): 40, ("t", 1): 500}, {("t", 0): 600, ("t", 1): 600}) == \
        {("A.t", 0): 1040, ("A.t", 1): 1500}
    assert promoting._translated("s", {("t", 0): 600}, {("t", 0): 600}) == {}  # nothing after it to place
    with pytest.raises(OperationalError, match=r"share group s: A->B's offset mapping has no target offset for "
                                               r"t\[0\] at 501"):
        promoting._translated("s", {("t", 0): 501}, {("t", 0): 600})
    assert promoting._translated("s", {}, {}) == {}
