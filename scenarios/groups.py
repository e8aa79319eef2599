"""Scenarios about consumer groups: subscribe-mode consumers under faults of the broker that
coordinates their group, with the classic protocol or KIP-848's (``group_protocol``)."""

from __future__ import annotations

from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS
from scenarios.base import Scenario
from scenarios.operations import no_loss_expect

GROUP_COORDINATOR_CHAOS = Scenario(
    name="group-coordinator-chaos",
    summary="three subscribe-mode consumers of one group; kills and partitions aimed at the "
            "group's coordinator; classic protocol by default, --group-protocol consumer "
            "for KIP-848; expect valid and every consumer live after the heal",
    doc=(
        "Three consumers share the run's consumer group (subscribe mode, auto-commit) over "
        "six partitions while two producers write. Every ~8 s a fault hits either the "
        "broker that coordinates the group (found when the fault starts) or a random one: "
        "a kill, or a network partition. Each coordinator fault moves the group to "
        "another coordinator and makes its members rejoin (classic) or re-heartbeat "
        "(KIP-848, where the broker computes the assignment). A member may re-read from "
        "the committed offset across a rebalance, but the group as a whole must not skip "
        "an offset another member did not read, nothing acknowledged may be lost, and "
        "after the final heal the group must read again within the liveness bound. Run "
        "with --group-protocol consumer (Kafka 4.0+) for the new protocol; the nightly "
        "matrix runs both."
    ),
    config={"acks": "all", "idempotence": True,
            "consumer_mode": "subscribe", "consumers": 3, "partitions": 6, "producers": 2,
            "rate": 100.0, "faults": ["kill", "partition"], "targets": ["coordinator", "random"],
            "fault_interval": 8.0, "duration": 60.0,
            # leader moves under idempotent producers: the open client bugs any such run can
            # hit are counted and named, never a failure by themselves (safe-config-chaos)
            "accept_known": list(LEADER_MOVE_CLIENT_BUGS)},
    expect=no_loss_expect,
    mechanism=[{"kind": "fault", "fault": "kill"}],
)

SCENARIOS: list[Scenario] = [GROUP_COORDINATOR_CHAOS]
