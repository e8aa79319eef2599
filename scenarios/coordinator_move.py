"""A group consumer whose new assignment's committed offsets are asked of a coordinator that
has just lost the group: librdkafka#5586 (open) answers NOT_COORDINATOR for the whole
OffsetFetch, never asks again, and the partitions are never fetched. The liveness phase
after the heal judges the consumer.

The window is narrow: the old coordinator answers NOT_COORDINATOR only between the moment
its controlled shutdown hands the group's ``__consumer_offsets`` partition to another broker
and the moment it closes its sockets, and the member must not have learnt of the move from
a heartbeat meanwhile. The script makes the consumer's OffsetFetch fall into it: the
consumer restarts (a consumer-down fault), its loop is held (a poll-stall) while it joins,
so the assignment waits for the application's next poll; the coordinator is stopped, and
the consumer is let go the moment the metadata shows the partition's new leader. Each cycle
tries another delay after the move; it stops once the consumer logged the failed fetch.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from contract.events import CLIENT_LOG, REBALANCE, parse_events
from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS, OFFSET_FETCH_NOT_COORDINATOR
from contract.settings import DEFAULT_GROUP_ID
from nemesis.faults.process import Stop
from nemesis.faults.stall import ConsumerDown, PollStall
from scenarios.base import Expect, Scenario
from scenarios.replication_steps import situation

#: The reader the script restarts (the run's only consumer, subscribe mode).
READER = "c0"
#: The brokers' offsets.topic.num.partitions (compose/config.py): the group's coordinator
#: leads partition hash(group) % this of __consumer_offsets.
OFFSETS_PARTITIONS = 3
#: How long the restarted consumer's loop is held before the coordinator is stopped: its
#: join and sync take well under a second (group.initial.rebalance.delay.ms is 0).
JOIN_S = 3.0
#: Delays from the metadata's new leader to letting the consumer poll, one per cycle in
#: turn: the old coordinator unloads the group and closes its sockets at times that vary.
DELAYS_S = (0.0, 0.1, 0.25, 0.05, 0.4, 0.15)
#: How long the script waits for the metadata to show the partition's new leader.
MOVE_WITHIN_S = 20.0
#: The consumer's heartbeat interval: a heartbeat answered NOT_COORDINATOR in the window
#: would tell the member of the move before its OffsetFetch (librdkafka heartbeats while
#: the assignment waits for the application), so the heartbeats are rare.
HEARTBEAT_MS = 10_000
#: How long the script waits for the reader's first assignment, and how long it lets it
#: read then: a reader stranded before it read anything would prove nothing.
ASSIGNED_WITHIN_S = 30.0
READ_S = 5.0
#: What a cycle takes at most (the broker's stop and start included): none begins later
#: than this before the workload ends.
CYCLE_S = 30.0


def offsets_partition(group: str) -> int:
    """The ``__consumer_offsets`` partition of ``group`` (Kafka: the group id's Java
    hashCode, made positive, modulo the partition count)."""
    h = 0
    for ch in group:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % OFFSETS_PARTITIONS


def _assigned(nem: Any) -> bool:
    """Whether the reader recorded an assignment of partitions (its first ``assigned``
    event): it must read before it is stranded, or its silence proves nothing
    (checkers/proof.py)."""
    events, _ = parse_events(nem.ctx.events.path.read_text(encoding="utf-8"))
    return any(e.kind == REBALANCE and e.detail.get("reader") == READER
               and e.detail.get("what") == "assigned" and e.detail.get("partitions")
               for e in events)


def _logged_failed_fetch(nem: Any, since_ns: int) -> bool:
    """Whether the reader logged librdkafka#5586's line since ``since_ns``."""
    events, _ = parse_events(nem.ctx.events.path.read_text(encoding="utf-8"))
    return any(e.kind == CLIENT_LOG and e.detail.get("bug") == OFFSET_FETCH_NOT_COORDINATOR
               and e.detail.get("client") == READER and e.ts_ns >= since_ns for e in events)


def _leader(nem: Any, partition: int) -> int:
    try:
        for p in nem.ctx.cluster.describe("__consumer_offsets", timeout_s=2):
            if p.partition == partition:
                return int(p.leader)
    except Exception:  # noqa: BLE001 - a broker shutting down may not answer: ask again
        pass
    return -2


def _release_after_move(nem: Any, stall: Any, old: int, delay_s: float) -> None:
    """Lets the held consumer poll ``delay_s`` after the metadata shows the group's
    partition led by another broker than ``old`` (or after MOVE_WITHIN_S)."""
    partition = offsets_partition(DEFAULT_GROUP_ID)
    until = time.monotonic() + MOVE_WITHIN_S
    while time.monotonic() < until and _leader(nem, partition) in (old, -2):
        time.sleep(0.02)
    time.sleep(delay_s)
    nem.end_fault(stall)


def coordinator_move_script(nem: Any) -> None:
    """Cycles until the reader logged the failed OffsetFetch or the run ends: restart the
    reader held before its first poll, stop the group's coordinator, let the reader poll
    right after the move, start the broker again."""
    cycle = 0
    waited = 0.0
    while not _assigned(nem) and waited < ASSIGNED_WITHIN_S:
        if nem.wait(0.5):
            return
        waited += 0.5
    if nem.wait(READ_S):
        return
    while time.monotonic() < nem.deadline - CYCLE_S:
        began = time.time_ns()
        delay = DELAYS_S[cycle % len(DELAYS_S)]
        cycle += 1
        nem.end_fault(nem.start_fault(ConsumerDown(READER)))
        stall = nem.start_fault(PollStall(READER))
        if nem.wait(JOIN_S):
            return
        old = nem.ctx.cluster.group_coordinator(DEFAULT_GROUP_ID)
        releaser = threading.Thread(target=_release_after_move, args=(nem, stall, old, delay),
                                    name="release-after-move", daemon=True)
        releaser.start()
        stop = nem.start_fault(Stop("coordinator"))
        releaser.join(MOVE_WITHIN_S + 5)
        if nem.wait(2):
            return
        hit = _logged_failed_fetch(nem, began)
        nem.end_fault(stop)
        if hit:
            situation(nem, "OffsetFetch answered NOT_COORDINATOR after the coordinator moved",
                      [old], reader=READER, cycle=cycle, delay_s=delay)
            return
        if nem.wait(3):
            return


#: Every consumer recovers, or one that did not is named by librdkafka#5586, which the
#: scenario accepts (it stays counted): nothing lost, no call hangs.
RECOVERS_OR_NAMED: Expect = {"valid": True, "anomalies": {"hung-call": "==0"}}

COORDINATOR_MOVED_ON_ASSIGN = Scenario(
    name="coordinator-moved-on-assign",
    summary="librdkafka#5586: a consumer's new assignment asks a coordinator that just "
            "lost the group for its committed offsets; NOT_COORDINATOR and never fetched",
    doc=(
        "Three brokers, one subscribe-mode consumer alone in its group (classic protocol), "
        "two producers. In cycles: the consumer closes and starts again (a consumer-down "
        "fault), its loop held (a poll-stall) so the assignment of its join waits for the "
        "application's next poll; the group's coordinator is stopped (SIGTERM: its "
        "controlled shutdown hands the group's __consumer_offsets partition to another "
        "broker before it closes its sockets), and the consumer is let go as soon as the "
        "metadata shows the new leader, each cycle after another short delay. Its first "
        "poll assigns the partitions and asks the coordinator it knows, the old one, for "
        "their committed offsets. Answered NOT_COORDINATOR for the whole request, "
        "librdkafka finds the new coordinator but never asks again: the partitions are "
        "never fetched (librdkafka#5586, open). The consumer logs librdkafka's group debug "
        "lines (debug=cgrp), the evidence that names it; the cycles stop once it logged "
        "the failed fetch, and the liveness phase asks it to read again within 30 s. A "
        "consumer left stuck that way is named and accepted; any other stuck consumer "
        "fails the run."
    ),
    config={"acks": "all", "idempotence": True, "faults": [], "duration": 150.0,
            "producers": 2, "consumers": 1, "consumer_mode": "subscribe", "partitions": 3,
            "rate": 50.0, "liveness": 30.0,
            "accept_known": [*LEADER_MOVE_CLIENT_BUGS, OFFSET_FETCH_NOT_COORDINATOR],
            "consumer_config": {"debug": "cgrp",
                                "heartbeat.interval.ms": str(HEARTBEAT_MS),
                                "session.timeout.ms": "30000"}},
    script=coordinator_move_script,
    script_faults=("consumer-down", "poll-stall", "stop"),
    settle_s=2.0,
    expect=RECOVERS_OR_NAMED,
    mechanism=[{"kind": "fault", "fault": "stop"}],
)

SCENARIOS: list[Scenario] = [COORDINATOR_MOVED_ON_ASSIGN]
