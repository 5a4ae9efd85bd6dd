"""A flow's lease against a real broker: its member holds the lease partition without reading the
records beside it (claims, older copies), with either control-plane client. A member that read
them made a confirmation round, a synchronous commit, per record: 300 in about a second when a
flow of 300 topics noted where its copies begin."""
from __future__ import annotations

import time

import pytest
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import java_conf
from mirrorspark.coordination.claims import Claims, SharedOlderCopies
from mirrorspark.coordination.lease import ROUND, FlowLease

pytestmark = pytest.mark.broker

NOTED = 300  # remote topics whose older-copies entry is written while the lease is held
WATCHED = 5.0  # seconds of confirmation rounds counted after the write


@pytest.mark.parametrize("client", ["java", "librdkafka"])
def test_records_written_beside_the_lease_make_no_confirmation_rounds(clusters, unique, client):
    bootstrap = clusters["backup"]
    plain = {"bootstrap.servers": bootstrap}
    conf = java_conf(plain, []) if client == "java" else plain
    claims = Claims(admin_client(plain), plain)
    claims.ensure_topic()
    flow, group = f"a->b-{unique}", f"lease-rounds-{unique}"
    lease = FlowLease(flow=flow, group=group, target_conf=conf, timeout=10.0, instance=unique)
    rounds: list[float] = []
    confirm = lease._confirm

    def counted(member) -> None:
        rounds.append(time.monotonic())
        confirm(member)

    lease._confirm = counted  # type: ignore[method-assign]
    lease.start()
    try:
        wait_until(lease.active, "the lease to be confirmed", timeout=60)
        time.sleep(2 * ROUND)  # the member's first rounds (its partition paused) are behind it
        SharedOlderCopies(claims, flow=flow, group=group).write_all(
            {f"remote-{unique}-{i}": {"generations": [], "held_from": {}} for i in range(NOTED)})
        written = time.monotonic()
        time.sleep(WATCHED)
        during = sum(1 for at in rounds if at >= written)
        assert lease.active(), "the lease stays confirmed"
        assert during <= WATCHED / ROUND + 2, \
            f"{during} confirmation rounds in {WATCHED:.0f} s after {NOTED} records beside the lease"
    finally:
        lease.stop()
