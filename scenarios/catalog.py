"""The built-in scenarios (DESIGN.md §6). Each module-level Scenario is registered here."""

from __future__ import annotations

from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS
from scenarios import (
    epoch_reread,
    groups,
    idle_client,
    liveness,
    lost_marker,
    offsets_coordinator,
    poll_stall,
    replication,
    stale_commit,
)
from scenarios.base import Scenario
from scenarios.close_skip import CLOSE_PAST_MARKER
from scenarios.coordinator_move import COORDINATOR_MOVED_ON_ASSIGN
from scenarios.eof_restart import EOF_CONSUMER_RESTART
from scenarios.operations import OPERATIONS, no_loss_expect

SAFE_CONFIG_CHAOS = Scenario(
    name="safe-config-chaos",
    summary="acks=all, RF=3, min.insync.replicas=2, no unclean election, idempotence; "
            "random kill/pause/partition faults; expect valid",
    doc=(
        "The configuration Kafka's documentation recommends for durability: every "
        "acknowledged write is on at least two replicas, and only an in-sync replica may "
        "become leader. Random kills, pauses and partitions move leadership around and "
        "shrink the ISR, but as long as one in-sync replica survives, no acknowledged write "
        "may be lost, duplicated or reordered by Kafka. The one exception is the client's: "
        "after a timeout or an out-of-order sequence librdkafka's idempotent producer bumps "
        "its epoch and may resend a batch the log already holds (open bug librdkafka#4953). "
        "The scenario accepts that known bug: each such record is counted and named, and "
        "any duplicate or reorder it does not explain fails the run."
    ),
    config={"acks": "all", "replication_factor": 3, "min_insync": 2, "unclean": False,
            "idempotence": True, "faults": ["kill", "pause", "partition"],
            "fault_interval": 8.0, "duration": 60.0,
            "accept_known": list(LEADER_MOVE_CLIENT_BUGS)},
    expect=no_loss_expect,
    # A kill, a pause past replica.lag.time.max.ms or a partition shrinks some ISR: the
    # faults reached Kafka, so "valid" means something.
    mechanism=[{"kind": "isr-shrunk-to", "size": 2}],
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [SAFE_CONFIG_CHAOS, *OPERATIONS,
                                                    *replication.SCENARIOS,
                                                    EOF_CONSUMER_RESTART, CLOSE_PAST_MARKER,
                                                    *liveness.SCENARIOS,
                                                    *idle_client.SCENARIOS,
                                                    *poll_stall.SCENARIOS,
                                                    *groups.SCENARIOS,
                                                    *stale_commit.SCENARIOS,
                                                    *lost_marker.SCENARIOS,
                                                    COORDINATOR_MOVED_ON_ASSIGN,
                                                    *offsets_coordinator.SCENARIOS,
                                                    *epoch_reread.SCENARIOS]}
