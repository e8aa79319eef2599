"""A KIP-848 group consumer whose application stops polling past ``max.poll.interval.ms``:
it must leave the group and rejoin on its next poll (librdkafka#5541: 2.12.0 to 2.14.x die
of a fatal INVALID_REQUEST instead). The liveness phase after the heal judges it.
"""

from __future__ import annotations

import time
from typing import Any

from contract.events import REBALANCE, parse_events
from contract.known_bugs import MAX_POLL_REJOIN_FATAL, known_bug
from nemesis.faults.stall import PollStall
from runner.config import RunConfig
from scenarios.base import Expect, Scenario, installed_client_version
from scenarios.replication_steps import SITUATION_MECHANISM, situation

#: The consumer's max.poll.interval.ms (KIP-848 lets it be below the session timeout).
MAX_POLL_INTERVAL_MS = 6000
#: How long its loop stops: past the interval by 4 s, so the timer has fired well before
#: the consumer polls again, even on a loaded host.
STALL_S = 10.0
#: How long the script waits for the consumer's first assignment before it stalls anyway
#: (KIP-848's first join took 3-5 s here).
ASSIGNED_WITHIN_S = 30.0
#: When the topic grows by a partition, counted from the stall's start. A stall alone did
#: not reproduce the bug by hand (2.14.2 rejoined 2 of 2 times): the member must also hold
#: an assignment change it cannot acknowledge (its rebalance callback is served by the
#: poll it does not make) when the interval expires; then its leave reply, handled before
#: the rejoin, strands it (2 of 2 with a partition added, 2 of 2 with a member joining).
#: With the brokers' KIP-848 heartbeat interval at 1 s the new assignment reaches the
#: consumer well before the interval expires.
GROW_AFTER_S = 1.0


def consumer_assigned(nem: Any) -> bool:
    """Whether a consumer of the run recorded an assignment of at least one partition."""
    text = nem.ctx.events.path.read_text(encoding="utf-8")
    events, _ = parse_events(text)
    return any(e.kind == REBALANCE and e.detail.get("what") == "assigned"
               and e.detail.get("partitions") for e in events)


def poll_stall_script(nem: Any) -> None:
    """Wait for the consumer's assignment (bounded), let it read 3 s, stall its loop for
    STALL_S and, 1 s into the stall, grow the topic by a partition: the group's assignment
    changes while the consumer cannot take it. Then let it go; the run heals (nothing else
    to heal) and the liveness phase asks the consumer to read again."""
    waited = 0.0
    while not consumer_assigned(nem) and waited < ASSIGNED_WITHIN_S:
        if nem.wait(0.5):  # the run is stopping
            return
        waited += 0.5
    if nem.wait(3):
        return
    began = time.monotonic()
    stall = nem.start_fault(PollStall("all"))
    if nem.wait(GROW_AFTER_S):
        return
    topic = nem.ctx.topic
    total = len(nem.ctx.cluster.describe(topic)) + 1
    nem.ctx.cluster.add_partitions(topic, total)
    # the situation the bug needs: an assignment change pending in the stalled consumer
    situation(nem, "topic grew during the poll stall", [], topic=topic, partitions=total)
    nem.wait(STALL_S - (time.monotonic() - began))
    nem.end_fault(stall)


def _expect(cfg: RunConfig, kafka_version: str) -> Expect:
    """Affected confluent-kafka: the consumer is stuck (INVALID); else it rejoins (VALID)."""
    bug = known_bug(MAX_POLL_REJOIN_FATAL)
    assert bug is not None
    if bug.affects(cfg.client_version or installed_client_version()):
        return {"valid": False, "anomalies": {"stuck-consumer": ">0"}}
    return {"valid": True, "anomalies": {"stuck-consumer": "==0", "stuck-producer": "==0",
                                         "hung-call": "==0"}}


MAX_POLL_STALL = Scenario(
    name="max-poll-stall",
    summary="librdkafka#5541: a KIP-848 consumer stops polling past max.poll.interval.ms, "
            "then polls again; 2.12.0-2.14.x die of a fatal INVALID_REQUEST",
    doc=(
        "One broker, one producer, one consumer in a group with group.protocol=consumer "
        "(KIP-848) and max.poll.interval.ms=6000. Once the consumer has its partition and "
        "reads, its poll loop stops calling consume() for 10 s (a poll-stall fault: the "
        "application is busy; librdkafka's threads go on heartbeating, so the session "
        "stays alive and only the poll interval expires); 1 s into the stall the topic "
        "grows by a partition, so the group's assignment changes while the consumer cannot "
        "take it. The client then leaves the group and, on its next poll, must rejoin and "
        "read on. librdkafka 2.12.0 to 2.14.x send the leave at once and mark the member to "
        "rejoin; with a rebalance still waiting for the application, the rejoin waits too, "
        "the leave's reply resets the member and clears the mark, and the member heartbeats "
        "at epoch 0 without the full join request: the broker answers INVALID_REQUEST and "
        "librdkafka makes it fatal (librdkafka#5541, fixed in 2.15.0). The liveness phase "
        "after the stall asks the consumer to read again within 30 s."
    ),
    config={"brokers": 1, "partitions": 1, "replication_factor": 1, "min_insync": 1,
            "acks": "all", "producers": 1, "rate": 20.0, "consumers": 1,
            "consumer_mode": "subscribe", "group_protocol": "consumer",
            "consumer_config": {"max.poll.interval.ms": str(MAX_POLL_INTERVAL_MS)},
            # the new assignment reaches the stalled member within a heartbeat (5 s by
            # default: as long as the interval's remainder)
            "broker_config": {"group.consumer.heartbeat.interval.ms": "1000",
                              "group.consumer.min.heartbeat.interval.ms": "1000"},
            "faults": [], "duration": 90.0, "liveness": 30.0},
    script=poll_stall_script,
    script_faults=("poll-stall",),
    settle_s=2.0,
    expect=_expect,
    mechanism=[{"kind": "fault", "fault": "poll-stall"}, SITUATION_MECHANISM],
)

SCENARIOS: list[Scenario] = [MAX_POLL_STALL]
