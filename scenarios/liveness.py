"""Scenarios about liveness after a heal (checkers/liveness.py judges them): faults that
leave the cluster whole again, after which every client must make progress within the
liveness bound.
"""

from __future__ import annotations

from typing import Any

from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS, LEADER_UNKNOWN, NO_BROKERS_METADATA
from nemesis.faults.network import Partition
from nemesis.faults.quorum import VoterPartition
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

#: How long every broker is cut from the controllers: far past broker.session.timeout.ms, so
#: the controllers fence every broker, and long enough that each broker's retries to reach
#: the controller have backed off: after the heal it catches up on the metadata (and learns
#: it is fenced) seconds before its next heartbeat unfences it. Cuts of 12-25 s showed no
#: metadata without a broker to any client in 6 of 7 runs; one of about 75 s, to every client.
FENCE_CUT_S = 75.0


def brokers_fenced_script(nem: Any) -> None:
    """Produce normally, cut every broker from the controllers for FENCE_CUT_S, heal."""
    nem.wait(8)
    cut = nem.start_fault(VoterPartition("brokers-from-controllers"))
    nem.wait(FENCE_CUT_S)
    nem.end_fault(cut)


#: Every client recovers, or one that did not is named by an open librdkafka bug the
#: scenario accepts (its records stay counted): no call hangs.
RECOVERS_OR_NAMED: Expect = {"valid": True, "anomalies": {"hung-call": "==0"}}

BROKERS_FENCED = Scenario(
    name="brokers-fenced",
    summary="every broker cut from the dedicated controllers for 75 s (all fenced), then "
            "healed: every client must recover (librdkafka#5301: a metadata response "
            "listing no broker, and the client never re-bootstraps)",
    doc=(
        "Dedicated controllers (three voters) and three brokers. Two producers and a "
        "consumer run normally; then every broker is cut from every controller (the "
        "clients still reach the brokers, the quorum stays whole) for 75 s, far past the "
        "brokers' session timeout, so the controllers fence every broker and take every "
        "partition's leader away. The brokers learn it only at the heal, and by then their "
        "retries to reach the controller have backed off: each catches up on the metadata "
        "seconds before its next heartbeat unfences it, and until the first is unfenced "
        "the metadata they serve lists no broker and no leader. After the heal "
        "every client must be acknowledged and read again within the liveness bound. "
        "librdkafka from 2.12 (reported on 2.13.0; not in 2.11.1) takes a metadata "
        "response with no broker and some topics as valid, drops every broker and "
        "re-bootstraps; a second such response drops the bootstrap brokers too and the "
        "client stays without a broker for good (librdkafka#5301, open). The clients log "
        "librdkafka's metadata debug lines, the evidence that names it; a client left "
        "without a broker that way is named and accepted, as is one left on no broker by "
        "a leader -1 update (librdkafka#5430)."
    ),
    config={"acks": "all", "idempotence": True, "faults": [], "duration": 100.0,
            "controllers": 3, "producers": 2, "consumers": 1, "rate": 50.0,
            "liveness": 45.0,
            "accept_known": [*LEADER_MOVE_CLIENT_BUGS, NO_BROKERS_METADATA, LEADER_UNKNOWN],
            # Kafka's own heartbeat and session (clusters kafka-chaos starts use 0.5 s and
            # 3 s), so a broker is fenced only by the cut
            "broker_config": {"broker.heartbeat.interval.ms": "2000",
                              "broker.session.timeout.ms": "9000"},
            # the metadata summary line ("0 brokers, 1 topics") is debug output
            "producer_config": {"debug": "metadata"},
            "consumer_config": {"debug": "metadata"}},
    script=brokers_fenced_script,
    script_faults=("voter-partition",),
    settle_s=2.0,
    expect=RECOVERS_OR_NAMED,
    mechanism=[{"kind": "fault", "fault": "voter-partition"}],
)

SCENARIOS: list[Scenario] = [ALL_BROKERS_DOWN, BROKERS_FENCED]
