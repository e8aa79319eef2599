"""Scenarios about liveness after a heal (checkers/liveness.py judges them): faults that
leave the cluster whole again, after which every client must make progress within the
liveness bound.
"""

from __future__ import annotations

from typing import Any

from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS
from nemesis.faults.network import Partition
from scenarios.base import Expect, Scenario

#: How long the client host is cut from every broker: librdkafka#5088's reproduction cuts
#: the client from every broker for about 30 s.
CUT_S = 30.0


def all_brokers_down_script(nem: Any) -> None:
    """Produce normally, cut the client host from every broker for CUT_S, heal."""
    nem.wait(8)
    cut = nem.start_fault(Partition("client", "all"))
    nem.wait(CUT_S)
    nem.end_fault(cut)


#: Every client recovers: on the fixed librdkafka, and also on 2.10.0, where this recipe
#: did not reproduce librdkafka#5088 (docs/bugs.md).
RECOVERS: Expect = {"valid": True, "anomalies": {
    "stuck-producer": "==0", "stuck-consumer": "==0", "hung-call": "==0"}}


ALL_BROKERS_DOWN = Scenario(
    name="all-brokers-down",
    summary="the client host cut from every broker for 30 s, then healed: every client "
            "must recover (librdkafka#5088: 2.10.0 loops re-bootstrapping)",
    doc=(
        "Two producers and a consumer run normally for a few seconds; then the client host "
        "is cut from every broker (their network namespaces drop its traffic both ways) "
        "for 30 s, so each client sees all its brokers down, and the cut is healed. The "
        "brokers never stopped and still form one cluster: after the heal every client "
        "must be acknowledged and read again within the liveness bound (45 s here: a "
        "consumer took up to 24 s). librdkafka 2.10.0 "
        "removes brokers a metadata response leaves out and re-bootstraps when all are "
        "down; it may then keep preferring the bootstrap brokers it never connected to and "
        "loop (librdkafka#5088, fixed in 2.10.1); here every client of 2.10.0 recovered, "
        "so the scenario expects every client live on any release."
    ),
    # A consumer resumed fetching 22-24 s after the heal on both 2.10.0 and 2.10.1 (the
    # producers in 2-4 s): the bound leaves that room, so a stuck client is one that does
    # not recover, not a slow one.
    config={"acks": "all", "idempotence": True, "faults": [], "duration": 90.0,
            "producers": 2, "consumers": 1, "rate": 50.0, "liveness": 45.0,
            # batches in flight when the cut begins time out: the open client bugs of an
            # idempotent producer's epoch bump are counted and named, never a failure alone
            "accept_known": list(LEADER_MOVE_CLIENT_BUGS)},
    script=all_brokers_down_script,
    script_faults=("partition",),
    settle_s=2.0,
    expect=RECOVERS,
    mechanism=[{"kind": "fault", "fault": "partition"}],
)

SCENARIOS: list[Scenario] = [ALL_BROKERS_DOWN]
