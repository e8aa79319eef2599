"""The fast-fault broker settings fence a silent KIP-848 member as fast as a classic one.

A KIP-848 group's session timeout is the broker's (45 s by default, re-armed when the group's
coordinator moves); a classic member's is the workload's own (10 s). An explore found a
restart-mode KIP-848 consumer whose leave was lost in a partition: its old member kept the
partitions for 45 s after the coordinator's last move, so the new member read nothing in the
30 s liveness window after the heal — Kafka's promise, not a bug, but longer than the bound.
"""

from __future__ import annotations

from compose.config import FAST_FAULTS
from contract.liveness import DEFAULT_BOUND_S
from workloads.config import ConsumerConfig


def test_a_silent_kip848_member_is_fenced_as_a_classic_one_is() -> None:
    classic = ConsumerConfig()
    session = int(FAST_FAULTS["group.consumer.session.timeout.ms"])
    heartbeat = int(FAST_FAULTS["group.consumer.heartbeat.interval.ms"])
    assert (session, heartbeat) == (classic.session_timeout_ms, classic.heartbeat_interval_ms)
    # each value must lie at or above its floor, or the brokers refuse to start
    assert int(FAST_FAULTS["group.consumer.min.session.timeout.ms"]) <= session
    assert int(FAST_FAULTS["group.consumer.min.heartbeat.interval.ms"]) <= heartbeat
    # fenced, then its partitions reassigned, well inside the liveness window after a heal
    assert session / 1000 < DEFAULT_BOUND_S / 2
