"""A KIP-848 group consumer whose application stops polling past ``max.poll.interval.ms``:
it must leave the group and rejoin on its next poll (librdkafka#5541: 2.12.0 to 2.14.x die
of a fatal INVALID_REQUEST instead). The liveness phase after the heal judges it.
"""

from __future__ import annotations

from typing import Any

from contract.events import REBALANCE, parse_events
from contract.known_bugs import MAX_POLL_REJOIN_FATAL, known_bug
from nemesis.faults.stall import PollStall
from runner.config import RunConfig
from scenarios.base import Expect, Scenario

#: The consumer's max.poll.interval.ms (KIP-848 lets it be below the session timeout).
MAX_POLL_INTERVAL_MS = 6000
#: How long its loop stops: past the interval by 4 s, so the timer has fired well before
#: the consumer polls again, even on a loaded host.
STALL_S = 10.0
#: How long the script waits for the consumer's first assignment before it stalls anyway
#: (KIP-848's first join took 3-5 s here).
ASSIGNED_WITHIN_S = 30.0


def _assigned(nem: Any) -> bool:
    """Whether a consumer of the run recorded an assignment of at least one partition."""
    text = nem.ctx.events.path.read_text(encoding="utf-8")
    events, _ = parse_events(text)
    return any(e.kind == REBALANCE and e.detail.get("what") == "assigned"
               and e.detail.get("partitions") for e in events)


def poll_stall_script(nem: Any) -> None:
    """Wait for the consumer's assignment (bounded), let it read 3 s, stall its loop for
    STALL_S, let it go; the run then heals (nothing else to heal) and the liveness phase
    asks the consumer to read again."""
    waited = 0.0
    while not _assigned(nem) and waited < ASSIGNED_WITHIN_S:
        if nem.wait(0.5):  # the run is stopping
            return
        waited += 0.5
    if nem.wait(3):
        return
    stall = nem.start_fault(PollStall("all"))
    nem.wait(STALL_S)
    nem.end_fault(stall)


def _expect(cfg: RunConfig, kafka_version: str) -> Expect:
    """Affected confluent-kafka: the consumer is stuck (INVALID); else it rejoins (VALID)."""
    from scenarios.bugs import installed_client_version

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
        "(KIP-848) and max.poll.interval.ms=6000. Once the consumer has its partitions and "
        "reads, its poll loop stops calling consume() for 10 s (a poll-stall fault: the "
        "application is busy; librdkafka's threads go on heartbeating, so the session "
        "stays alive and only the poll interval expires). The client then leaves the group "
        "and, on its next poll, must rejoin and read on. librdkafka 2.12.0 to 2.14.x send "
        "the leave at once; when its reply is handled before the rejoin, the member "
        "heartbeats at epoch 0 without the full join request, the broker answers "
        "INVALID_REQUEST and librdkafka makes it fatal (librdkafka#5541, fixed in 2.15.0). "
        "The liveness phase after the stall asks the consumer to read again within 30 s."
    ),
    config={"brokers": 1, "partitions": 1, "replication_factor": 1, "min_insync": 1,
            "acks": "all", "producers": 1, "rate": 20.0, "consumers": 1,
            "consumer_mode": "subscribe", "group_protocol": "consumer",
            "consumer_config": {"max.poll.interval.ms": str(MAX_POLL_INTERVAL_MS)},
            "faults": [], "duration": 90.0, "liveness": 30.0},
    script=poll_stall_script,
    script_faults=("poll-stall",),
    settle_s=2.0,
    expect=_expect,
    mechanism=[{"kind": "fault", "fault": "poll-stall"}],
)

SCENARIOS: list[Scenario] = [MAX_POLL_STALL]
