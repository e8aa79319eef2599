"""stalled-reader-leader-move (librdkafka#4261): the leader of a partition moves while a
group consumer holds records it fetched but has not handed to the application yet; on
librdkafka 2.1.0 the consumer reads them again.

librdkafka 2.1.0 (KIP-320) validates its position whenever metadata shows a new leader
epoch, and resets the next fetch start to the *application's* position (the offset after
the last record the application was given). Once the validation succeeds it starts fetching
again from there, while the records it had fetched past that position stay queued: the
application reads the queue, then the same offsets once more, one step back within one
session (a nonmonotonic-poll with no rebalance between). 2.1.1 validates the fetch position
instead and drops a fetch response that arrives during the validation. The catalogue entry
(scenarios/bugs.py) pins the scenario to both releases.
"""

from __future__ import annotations

from typing import Any

from contract.known_bugs import EPOCH_VALIDATION_REREAD, LEADER_MOVE_CLIENT_BUGS, known_bug
from nemesis.faults.process import Stop
from nemesis.faults.stall import PollStall
from runner.config import RunConfig
from scenarios import replication_steps as st
from scenarios.base import Expect, Scenario, installed_client_version
from scenarios.operations import restore_preferred_leaders
from scenarios.poll_stall import ASSIGNED_WITHIN_S, consumer_assigned

#: How long the application's loop is stopped before the leader moves: the client fetches
#: on meanwhile, so it holds this much of the producer's output unread (~400 records).
FILL_S = 2.0
#: How long the loop stays stopped once the new leader is seen: the metadata update and the
#: validation (one OffsetForLeaderEpoch round trip) happen in it, on a loaded host too.
AFTER_MOVE_S = 4.0


def _stalled_move(nem: Any, move: Any, what: str) -> bool:
    """Stops the consumer's loop, lets it fetch FILL_S, runs ``move`` (which moves the
    partition's leader and returns the new leader, or None when it could not), records the
    situation, lets the loop go AFTER_MOVE_S later. False when the run stops."""
    stall = nem.start_fault(PollStall("all"))
    try:
        if nem.wait(FILL_S):
            return False
        before = st.state(nem)
        leader = move(before.leader if before is not None else -1)
        if leader is not None:
            st.situation(nem, what, [leader], leader=leader,
                         previous=before.leader if before is not None else None)
        return not nem.wait(AFTER_MOVE_S)
    finally:
        nem.end_fault(stall)


def epoch_reread_script(nem: Any) -> None:
    """Wait for the consumer's assignment (bounded) and 3 s of reads. Then twice, each time
    with the consumer's loop stopped: a clean stop of the partition's leader (controlled
    shutdown hands leadership to a follower: a new leader epoch), and, after the broker is
    back, leadership handed back to the preferred replica (a new epoch again)."""
    waited = 0.0
    while not consumer_assigned(nem) and waited < ASSIGNED_WITHIN_S:
        if nem.wait(0.5):
            return
        waited += 0.5
    if nem.wait(3):
        return
    stopped: list[Any] = []

    def stop_leader(old: int) -> int | None:
        stopped.append(st.start(nem, Stop("leader")))
        return st.wait_state(nem, "a new leader after the clean stop", st.led_by_other(old),
                             20).leader

    def back_to_preferred(old: int) -> int | None:
        if not restore_preferred_leaders(nem, timeout_s=20.0, auto_s=8.0):
            return None
        now = st.state(nem)
        return now.leader if now is not None and now.leader != old else None

    if not _stalled_move(nem, stop_leader, "leader moved (clean stop) while the consumer "
                                           "held unread records"):
        return
    for fault in stopped:
        nem.end_fault(fault)  # starts the broker again
    st.wait_state(nem, "the full ISR again", st.full_isr, 60)
    _stalled_move(nem, back_to_preferred, "leader moved back (preferred replica) while the "
                                          "consumer held unread records")


def _expect(cfg: RunConfig, kafka_version: str) -> Expect:
    """Affected confluent-kafka: steps back (INVALID); else none (VALID)."""
    bug = known_bug(EPOCH_VALIDATION_REREAD)
    assert bug is not None
    if bug.affects(cfg.client_version or installed_client_version()):
        return {"valid": False, "anomalies": {"nonmonotonic-poll": ">0"}}
    return {"valid": True, "anomalies": {"nonmonotonic-poll": "==0", "poll-skip": "==0"}}


STALLED_READER_LEADER_MOVE = Scenario(
    name="stalled-reader-leader-move",
    summary="librdkafka#4261: a partition's leader moves while its consumer holds fetched, "
            "unread records; on librdkafka 2.1.0 the consumer reads them again",
    doc=(
        "Three brokers (Kafka 3.9.1: the client is old), one partition (RF 3, "
        "min.insync.replicas 2), one idempotent producer at 200 records/s, one group "
        "consumer. Twice, the consumer's poll loop stops (a poll-stall fault: the "
        "application is busy, librdkafka fetches on) for 2 s, then the partition's leader "
        "moves: first a clean stop of the leader (controlled shutdown hands leadership to a "
        "follower), then, with the broker back and the ISR full, leadership back to the "
        "preferred replica; the loop goes on 4 s after each move. Each move is a new leader "
        "epoch, which librdkafka 2.1.0 validates (KIP-320) from the application's position: "
        "it fetches again from the offset after the last record the application was given, "
        "while the records it had fetched beyond it stay queued, so the consumer reads "
        "those offsets twice: a step back with no rebalance between (librdkafka#4261, "
        "fixed in 2.1.1). The run accepts the idempotent producer's known leader-move bugs."
    ),
    config={"kafka_version": "3.9.1", "brokers": 3, "partitions": 1, "replication_factor": 3,
            "min_insync": 2, "acks": "all", "idempotence": True, "producers": 1,
            "rate": 200.0, "consumers": 1, "consumer_mode": "subscribe", "faults": [],
            "duration": 120.0, "accept_known": list(LEADER_MOVE_CLIENT_BUGS)},
    script=epoch_reread_script,
    script_faults=("poll-stall", "stop"),
    settle_s=3.0,
    expect=_expect,
    mechanism=[{"kind": "fault", "fault": "poll-stall"},
               {"kind": "leader-epoch-increased"},
               st.SITUATION_MECHANISM],
)

SCENARIOS: list[Scenario] = [STALLED_READER_LEADER_MOVE]
