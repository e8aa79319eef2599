"""A transaction marker lost by an unclean election (KAFKA-20716).

The followers of partition 0 are paused while transactional producers write to it: their
logs end inside the transactions open at that moment. Once the controller has fenced them
(and so dropped them from the ISR), the leader alone appends the rest of those transactions
and their COMMIT/ABORT markers. Then the leader is killed, the followers resume, and the
controller elects one of them uncleanly: it holds the data of the transactions open at the
pause but not their markers, so its producer state keeps them open and its last stable
offset (LSO) cannot pass their first offsets, while the coordinator counts them as done.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import OffsetSpec

from contract.events import SITUATION
from contract.known_bugs import KAFKA_20716
from nemesis.faults.base import Fault
from nemesis.faults.process import Kill, Pause
from runner.config import RunConfig
from scenarios import replication_steps as st
from scenarios.base import Expect, Scenario

log = logging.getLogger("kafka_chaos.scenarios")

#: Records the lone leader must acknowledge (its high watermark moving on in the epoch the
#: pause began in) before it is killed: the markers of the transactions open at the pause
#: are among them.
_ALONE_TAIL = 100
#: What the producer of lost-txn-marker writes in all (max_records) before it stops.
_RECORDS = 200


def _stable(nem: Any, admin: Any) -> tuple[int, int] | None:
    """The partition's (high watermark, last stable offset) as its leader answers now, or
    None without an answer."""
    tp = TP(nem.ctx.topic, 0)
    try:
        hw = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=3)[tp].result()
        lso = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=3,
                                 isolation_level=IsolationLevel.READ_COMMITTED)[tp].result()
    except KafkaException:
        return None
    return int(hw.offset), int(lso.offset)


def _wait_stable(nem: Any, admin: Any, what: str, cond: Callable[[int, int], bool],
                 timeout_s: float) -> tuple[int, int]:
    """Polls (high watermark, last stable offset) until ``cond`` holds (bounded)."""
    end = time.monotonic() + timeout_s
    last = None
    while True:
        last = _stable(nem, admin) or last
        if last is not None and cond(*last):
            return last
        if time.monotonic() >= end:
            raise st.SetupFailed(f"timed out after {timeout_s:.0f}s waiting for {what} "
                                 f"(last high watermark, stable offset: {last})")
        if nem.wait(0.05):
            raise st.SetupFailed(f"run stopped while waiting for {what}")


def _wait_settled(nem: Any, admin: Any, at_least: int, hold_s: float,
                  timeout_s: float) -> tuple[int, int]:
    """Waits until the producer is done: the high watermark past ``at_least`` (its records,
    markers besides), the stable offset equal to it, and neither moved for ``hold_s``
    (bounded by ``timeout_s``)."""
    end = time.monotonic() + timeout_s
    seen: tuple[int, int] | None = None
    since = time.monotonic()
    while True:
        now = _stable(nem, admin)
        if now is not None and now != seen:
            seen, since = now, time.monotonic()
        if (seen is not None and seen[0] == seen[1] and seen[0] >= at_least
                and time.monotonic() - since >= hold_s):
            return seen
        if time.monotonic() >= end:
            raise st.SetupFailed(f"timed out after {timeout_s:.0f}s waiting for the producer "
                                 f"to finish alone (last high watermark, stable offset: {seen})")
        if nem.wait(0.2):
            raise st.SetupFailed("run stopped while waiting for the producer to finish")


def _preferred_leader(nem: Any) -> Any:
    try:
        return st.wait_state(nem, "the preferred replica leading with the full ISR",
                             lambda p: st.full_isr(p) and p.leader == p.replicas[0], 12)
    except st.SetupFailed:
        return st.wait_state(nem, "a leader with the full ISR", st.full_isr, 30)


def _pause_followers(nem: Any, followers: list[int]) -> list[Fault]:
    # Frozen followers stop fetching and heartbeating: the controller fences them after
    # broker.session.timeout.ms and drops them from the ISR. Their logs end wherever their
    # last fetch left them, inside the transactions open then.
    return [st.start(nem, Pause(str(f))) for f in followers]


def _elect_a_follower(nem: Any, leader: int, pauses: list[Fault]) -> None:
    kill = st.start(nem, Kill(str(leader), wait_ready=False))
    for p in pauses:
        nem.end_fault(p)
    st.wait_state(nem, "a stale follower elected", st.led_by_other(leader), 30)
    nem.end_fault(kill)  # restart, not waited for (see acks1-leader-failover)


# ---------------------------------------------------------------- lost-txn-marker
def _stall_script(nem: Any) -> None:
    st.run_guarded(nem, _stall_body)


def _stall_body(nem: Any) -> None:
    nem.wait(3)
    admin = nem.ctx.cluster.admin()
    s = _preferred_leader(nem)
    leader = s.leader
    followers = [r for r in s.replicas if r != leader]
    # A transaction open with its first records below the high watermark: every follower
    # holds them, none holds its marker yet.
    hw, lso = _wait_stable(nem, admin, "an open transaction below the high watermark",
                           lambda h, o: o < h, 20)
    pauses = _pause_followers(nem, followers)
    try:
        st.wait_state(nem, "the ISR shrunk to the leader alone", st.led_alone_by(leader), 20)
        # The producer writes its last records alone and stops: every transaction of it is
        # decided on the leader, none is open anywhere, and it never writes again.
        # 200 records at 10/s, blocked while the paused brokers are fenced and their
        # transaction coordinators move: over 60 s on a loaded machine
        done = _wait_settled(nem, admin, _RECORDS, 3.0, 120)
        s = st.wait_state(nem, "the ISR still the leader alone", st.led_alone_by(leader), 1)
    except st.SetupFailed:
        for p in pauses:
            nem.end_fault(p)
        raise
    st.situation(nem, "the producer finished alone on the leader; its paused followers hold "
                 "a transaction's first records without its marker", [leader],
                 isr=list(s.isr), followers=followers, open_at_pause=[hw, lso],
                 settled_alone=list(done))
    _elect_a_follower(nem, leader, pauses)


# ---------------------------------------------------------------- lost-txn-marker-continued
def _script(nem: Any) -> None:
    st.run_guarded(nem, _body)


def _body(nem: Any) -> None:
    nem.wait(8)
    admin = nem.ctx.cluster.admin()
    s = _preferred_leader(nem)
    leader = s.leader
    followers = [r for r in s.replicas if r != leader]
    epoch = st.wait_offsets(nem, "the leader's epoch", lambda o: o.epoch is not None, 10,
                            admin).epoch
    # as in lost-txn-marker: a transaction open with its first records on every follower
    _wait_stable(nem, admin, "an open transaction below the high watermark",
                 lambda h, o: o < h, 20)
    pauses = _pause_followers(nem, followers)
    try:
        st.wait_state(nem, "the ISR shrunk to the leader alone", st.led_alone_by(leader), 20)
        first = st.wait_offsets(nem, "the lone leader's high watermark",
                                lambda o: o.epoch is not None, 5, admin)
        nem.wait(3)
        then = st.wait_offsets(nem, f"{_ALONE_TAIL} records acknowledged by the lone leader",
                               lambda o: o.epoch != epoch or o.hw >= first.hw + _ALONE_TAIL,
                               30, admin)
        if not first.epoch == then.epoch == epoch:
            raise st.SetupFailed(f"leader {leader} was re-elected: leader epoch "
                                 f"{first.epoch}/{then.epoch}, the pause began in {epoch}")
        s = st.wait_state(nem, "the ISR still the leader alone", st.led_alone_by(leader), 1)
    except st.SetupFailed:
        for p in pauses:
            nem.end_fault(p)
        raise
    st.situation(nem, "the lone leader committed transactions its paused followers hold "
                 "only in part", [leader], isr=list(s.isr), leader_epoch=epoch,
                 high_watermark_alone=[first.hw, then.hw], followers=followers)
    _elect_a_follower(nem, leader, pauses)


_COMMON: dict[str, Any] = {
    "partitions": 1, "replication_factor": 3, "faults": [], "controllers": 1, "acks": "all",
    "idempotence": True, "transactions": True, "isolation_level": "read_committed",
    "min_insync": 1, "unclean": True, "consumers": 1,
    "broker_config": {"unclean.leader.election.interval.ms": "1000",
                      # the transaction log partitions of the paused brokers move to the
                      # lone leader, whose coordinator must go on alone
                      "transaction.state.log.min.isr": "1"},
    "producer_config": {"transaction.timeout.ms": "30000"}}

_MECHANISM: list[dict[str, Any]] = [
    {"kind": "isr-shrunk-to", "size": 1}, {"kind": "fault", "fault": "pause"},
    {"kind": "fault", "fault": "kill"}, st.SITUATION_MECHANISM,
    {"kind": "stale-leader-elected", "after": SITUATION}]


def _stall_expect(cfg: RunConfig, kafka_version: str) -> Expect:
    # Every Kafka release: the elected follower keeps the transaction open for good. What the
    # lone leader alone had is lost (allowed: unclean election); the replicas agree.
    return {"anomalies": {"stalled-lso": ">0", "divergence": "==0"}}


LOST_TXN_MARKER = Scenario(
    name="lost-txn-marker",
    summary="KAFKA-20716: an unclean election to a follower that has a transaction's data but "
            "not its marker; the last stable offset stays there for good",
    doc=(
        "One transactional producer (10 records a transaction, 10 records/s, 200 records in "
        "all) writes to one partition, RF 3, unclean election on, min.insync.replicas=1. "
        "While a transaction is open with its first records below the high watermark (so on "
        "every follower), both followers are paused (SIGSTOP); the controller fences them "
        "and drops them from the ISR. The leader alone appends the rest of that transaction "
        "and its marker, and the producer writes its last records and stops. Then the "
        "leader is killed, the followers resume and one is elected uncleanly. It holds the "
        "transaction's first records without its marker, so it rebuilds the producer as "
        "having a transaction open, which the coordinator counts as complete; the producer "
        "never writes again, so no later marker settles it. The partition's last stable "
        "offset stays at the transaction's first offset below the high watermark, and "
        "read_committed readers never read past it: the records there, committed, are "
        "stalled-lso, tagged KAFKA-20716 (no fix: upstream documents it). What the lone "
        "leader alone had is lost, which unclean election allows."
    ),
    config={**_COMMON, "producers": 1, "rate": 10.0, "max_records": _RECORDS,
            "duration": 120.0,
            "accept_known": [KAFKA_20716]},
    script=_stall_script,
    script_faults=("pause", "kill"),
    settle_s=10.0,
    expect=_stall_expect,
    mechanism=_MECHANISM,
)


LOST_TXN_MARKER_CONTINUED = Scenario(
    name="lost-txn-marker-continued",
    summary="a transaction marker lost by an unclean election while its producer goes on: "
            "the producer's next marker decides the lost one's records again",
    doc=(
        "Two transactional producers (10 records a transaction, one in ten aborted) write to "
        "one partition, RF 3, unclean election on, min.insync.replicas=1. Both followers are "
        "paused (SIGSTOP) while the producers write: their logs end inside the transactions "
        "open then, and the controller fences them and drops them from the ISR. The leader "
        "alone appends the rest of those transactions and their markers and acknowledges "
        "100 records more; then it is killed, the followers resume and one is elected "
        "uncleanly. It holds the data of the transactions open at the pause (the script "
        "pauses while one is open with its first records below the high watermark) without their "
        "markers and rebuilds their producers as having transactions open; the producers go "
        "on, and each one's next marker closes the open transaction with its own outcome: "
        "a committed transaction's records vanish for read_committed readers when the next "
        "marker is an abort, an aborted one's become visible when it is a commit."
    ),
    config={**_COMMON, "producers": 2, "rate": 100.0, "duration": 60.0},
    script=_script,
    script_faults=("pause", "kill"),
    settle_s=15.0,
    expect={"anomalies": {"divergence": "==0"}},
    mechanism=_MECHANISM,
)

SCENARIOS = [LOST_TXN_MARKER, LOST_TXN_MARKER_CONTINUED]
