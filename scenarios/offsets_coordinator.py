"""A transactional producer's send_offsets_to_transaction while the broker coordinating its
consumer group is killed: librdkafka waits for that coordinator past the call's timeout
(librdkafka#5456, open), and once the broker was down longer than the broker session
timeout, fenced and dropped from the metadata, it waits on the broker handle metadata
decommissioned (librdkafka#5511, open).

The producer runs a group consumer of its own on the run's topic and sends its positions
in every transaction (run option ``send_offsets``, workloads/txn_offsets.py), with a 5 s
timeout; the run picked the group so that its coordinator is not the transaction's
(runner/offsets_groups.py). The script kills the group's coordinator, never the
transaction's: each kill's start event records both (``coordinators``,
``txn_coordinators``), which is what names a hung call (checkers/hung_calls.py).
"""

from __future__ import annotations

import logging
from typing import Any

from contract.known_bugs import OFFSETS_COORDINATOR_DOWN, OFFSETS_COORDINATOR_FENCED
from nemesis.faults.process import Kill
from scenarios.base import Expect, Scenario
from scenarios.replication_steps import situation

log = logging.getLogger("kafka_chaos.scenarios.offsets_coordinator")

#: How long the producer sends offsets before the first kill: its consumer joins the
#: group and the producer learns the group's coordinator from its first TxnOffsetCommit.
WARM_S = 15.0
#: How long a cycle waits after a heal before the next kill (the broker serves again).
GAP_S = 10.0


def _coordinators(nem: Any) -> tuple[str, str, int, int] | None:
    """(group, transactional id, group's coordinator, transaction's coordinator) now, or
    None when the cluster cannot name them."""
    groups, txn_ids = nem.ctx.groups(), nem.ctx.transactional_ids()
    if not groups or not txn_ids:
        return None
    try:
        return (groups[0], txn_ids[0], nem.ctx.cluster.group_coordinator(groups[0], timeout_s=10),
                nem.ctx.cluster.transaction_coordinator(txn_ids[0], timeout_s=5))
    except Exception as e:  # noqa: BLE001 - a cycle without them is skipped (ClusterError too)
        log.info("coordinators not known: %s", e)
        return None


def kill_group_coordinator(hold_s: float, cycles: int) -> Any:
    """A script: up to ``cycles`` times, kill the producer's group's coordinator for
    ``hold_s`` (only while it is not the transaction's coordinator), then restart it."""

    def script(nem: Any) -> None:
        if nem.wait(WARM_S):
            return
        for cycle in range(cycles):
            found = _coordinators(nem)
            if found is not None and found[2] != found[3]:
                group, txn_id, node, txn_node = found
                situation(nem, "the offsets group's coordinator is not the transaction's",
                          [node], group=group, transactional_id=txn_id,
                          transaction_coordinator=txn_node, cycle=cycle + 1)
                kill = nem.start_fault(Kill(str(node)))
                stopped = nem.wait(hold_s)
                nem.end_fault(kill)
                if stopped:
                    return
            if nem.wait(GAP_S):
                return

    return script


#: Nothing but the named hang: every hung call must be the bug's (accepted), every
#: acknowledged write kept.
NAMED_ONLY: Expect = {"valid": True}


def _config(bug: str, duration: float, broker: dict[str, str]) -> dict[str, Any]:
    return {"acks": "all", "transactions": True, "send_offsets": True, "faults": [],
            "producers": 1, "consumers": 1, "partitions": 3, "rate": 20.0,
            "duration": duration, "liveness": 30.0, "accept_known": [bug],
            "broker_config": broker}


OFFSETS_COORDINATOR_KILLED = Scenario(
    name="offsets-coordinator-killed",
    summary="librdkafka#5456: send_offsets_to_transaction blocks past its timeout while "
            "the group's coordinator is killed (briefly: not fenced)",
    doc=(
        "One transactional producer that, in every transaction it commits, sends the "
        "positions of a group consumer of its own on the run's topic "
        "(send_offsets_to_transaction, 5 s timeout); its group's coordinator is another "
        "broker than its transaction's. The brokers' session timeout is 30 s. Three times, "
        "10 s apart, the group's coordinator is killed for 3 s and restarted: its outage, "
        "the restart included, is too short for it to be fenced, so the metadata goes on "
        "naming it. "
        "librdkafka waits for the coordinator beyond the call's timeout (librdkafka#5456, "
        "open); a call blocked past 5 s plus the watch's slack is a hung-call, named by "
        "the kill's recorded coordinators and accepted. Any other hung call, or any lost "
        "write, fails the run."
    ),
    # the broker's whole outage (the kill and its restart, 10 s or more) stays well within
    # the session timeout: never fenced, the metadata names it throughout
    config=_config(OFFSETS_COORDINATOR_DOWN, 100.0, {"broker.session.timeout.ms": "30000"}),
    script=kill_group_coordinator(3.0, 3),
    script_faults=("kill",),
    settle_s=10.0,
    expect=NAMED_ONLY,
    mechanism=[{"kind": "fault", "fault": "kill"}],
)

OFFSETS_COORDINATOR_FENCED_SCENARIO = Scenario(
    name="offsets-coordinator-fenced",
    summary="librdkafka#5511: send_offsets_to_transaction blocks once the group's "
            "coordinator was fenced and left the metadata",
    doc=(
        "The workload of offsets-coordinator-killed (one transactional producer sending "
        "its own group consumer's positions in every transaction, 5 s timeout, the "
        "group's coordinator another broker than the transaction's). The group's "
        "coordinator is killed once for 40 s, far past the brokers' session timeout (3 s): "
        "the controller fences it and the metadata stops listing it, which decommissions "
        "the broker handle the producer keeps for the group's coordinator; the call waits "
        "on it past its timeout (librdkafka#5511, open). A hung-call named by the kill's "
        "recorded coordinators is accepted. Once hung, the call was not seen to return: "
        "the run ends by killing the producer process in it. The producer wrote its rows "
        "before the call and every reader reads read_committed, so the history misses only "
        "its open transaction, which no reader can be served: the run is judged. The "
        "producer, blocked through the liveness phase, is stuck, named by the same call. "
        "Any other hung call, stuck client or anomaly fails the run."
    ),
    config=_config(OFFSETS_COORDINATOR_FENCED, 90.0, {}),
    script=kill_group_coordinator(40.0, 1),
    script_faults=("kill",),
    settle_s=10.0,
    expect=NAMED_ONLY,
    mechanism=[{"kind": "fault", "fault": "kill"}],
)

SCENARIOS: list[Scenario] = [OFFSETS_COORDINATOR_KILLED, OFFSETS_COORDINATOR_FENCED_SCENARIO]
