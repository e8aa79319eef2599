"""The all-replicas-power-loss scenario of DESIGN.md §6: every broker loses power at once
once each replica holds a flushed head and an unflushed tail, then restarts. The script waits
for that situation by polling the replicas' recovery-point checkpoints, never by sleeping."""

from __future__ import annotations

import time
from typing import Any

from contract.known_bugs import LEADER_MOVE_CLIENT_BUGS, UNCLEAN_RECOVERY
from nemesis.faults.base import FaultContext
from nemesis.faults.power import PowerLoss, read_checkpoint
from runner.config import RunConfig
from scenarios.base import Expect, Scenario
from scenarios.replication_steps import situation
from scenarios.script_steps import CATCH_UP_S, isr_full, wait_until

UNFLUSHED_TAIL = 100  # records past the recovery point on every replica before the cut
SEGMENT_MS = 15_000  # a segment rolls (and is flushed) this long after its first record


def _unflushed_tails(ctx: FaultContext) -> dict[str, int] | None:
    """``{"topic-p": the smallest unflushed tail of its replicas}`` when every replica of
    every partition has flushed part of its log (a segment rolled and its recovery point was
    checkpointed) *and* holds an unflushed tail of at least UNFLUSHED_TAIL records; None
    otherwise. The tail grows from nothing after each roll: the segments roll every
    SEGMENT_MS so that a slow machine's tail, too, reaches the size long before the next roll
    flushes it (with 5 s segments a loaded run's tail reached 200 records in the last
    moments of a segment, or never, and its cut lost nothing acknowledged)."""
    try:
        parts = ctx.cluster.describe(ctx.topic)
        ends = ctx.cluster.end_offsets(ctx.topic, timeout_s=5)
        points = {nid: read_checkpoint(node.data_mountpoint()
                                       / "recovery-point-offset-checkpoint")
                  for nid, node in ctx.cluster.brokers.items()}
    except Exception:  # noqa: BLE001 - not ready (or a checkpoint being rewritten): not yet
        return None
    tails: dict[str, int] = {}
    for p in parts:
        name = f"{ctx.topic}-{p.partition}"
        for replica in p.replicas:
            rp = points.get(replica, {}).get(name)
            tail = ends.get(p.partition, 0) - (rp or 0)
            if rp is None or rp <= 0 or tail < UNFLUSHED_TAIL:
                return None
            tails[name] = min(tails.get(name, tail), tail)
    return tails


def power_loss_script(nem: Any) -> None:
    """Wait for a flushed head and an unflushed tail everywhere, cut power on every broker
    at once, restore it, and wait for the replicas to agree again. The situation is recorded
    only when it held: a cut without it (the wait timed out) is not the scenario's, and its
    mechanism (a power loss after the situation) is then not observed."""
    tails: dict[str, int] | None = None

    def ready(ctx: FaultContext) -> bool:
        nonlocal tails
        tails = _unflushed_tails(ctx)
        return tails is not None

    if wait_until(nem, ready, max(5.0, nem.deadline - time.monotonic() - 20),
                  "flushed head and unflushed tail on every replica", every_s=1.0):
        situation(nem, "every replica holds a flushed head and an unflushed tail",
                  sorted(nem.ctx.cluster.brokers), unflushed=tails)
    fault = nem.start_fault(PowerLoss("all"))
    nem.end_fault(fault)  # power back: restart every node, wait until registered
    wait_until(nem, isr_full, CATCH_UP_S, "isr-full after power loss")


def power_loss_expect(cfg: RunConfig, _version: str) -> Expect:
    """What Kafka does depends on who read the tail before it vanished.

    The unflushed tail was acknowledged by every in-sync replica and survives nowhere: what
    nobody read is lost, and what a live consumer read has its offset reused by new records
    after recovery (reused-offset). Both are excused by the power loss of the whole ISR; the
    consumer is reset to the truncation point. What must hold: no divergence, and no offset
    read as two records unless the log's truncation explains it."""
    anomalies = {"divergence": "==0", "inconsistent-offset": "==0"}
    if cfg.consumers > 0:
        anomalies["reused-offset"] = ">0"
    elif cfg.acks == "all" and "segment.ms" in cfg.topic_config:
        anomalies["lost"] = ">0"
    return {"valid": True, "anomalies": anomalies}


ALL_REPLICAS_POWER_LOSS = Scenario(
    name="all-replicas-power-loss",
    summary="every broker loses power at once (unflushed page cache gone), then restarts; "
            "loss allowed, no divergence, no inconsistent offsets",
    doc=(
        "Kafka never fsyncs a partition's log by default: it relies on replication, and a "
        "segment is flushed only when it rolls (or on flush.ms / flush.messages, or a clean "
        "shutdown). Its recovery point, checkpointed to disk, marks how far the log is known "
        "to be on disk. Here segments roll every 15 s (segment.ms) and the recovery point is "
        "checkpointed every second, so each replica has a flushed head and an unflushed tail. "
        "Once every replica has both (100 unflushed records at least), all brokers lose "
        "power together: each JVM is killed "
        "and its logs are cut back to their recovery points (the page cache is gone). The "
        "tail was acknowledged with acks=all by every in-sync replica and survives nowhere, "
        "so it is lost; Kafka allows that, because its promise holds only while one in-sync "
        "replica survives. What Kafka must still do is recover consistently: the elected "
        "leader's log becomes the truth, followers truncate to it by leader epoch, and no two "
        "replicas hold different records at one offset. The simulation is the worst case of "
        "a power cut: a real kernel writes dirty pages back within ~30 s on its own. Seen "
        "on Kafka 4.3 (Eligible Leader Replicas on): every replica's unclean shutdown empties "
        "the ISR and the ELR, and the controller elects the last known ELR member, logging "
        "an 'unclean election' although unclean.leader.election.enable=false. That member "
        "is the last known leader, not the longest log (unclean recovery is not built: "
        "KAFKA-15580): when a replica checkpointed a later recovery point than the elected "
        "one, the records between the two, on its disk, are truncated to the leader's log. "
        "The scenario accepts that known limitation, record by record: only where every "
        "in-sync replica since the record lost power and the elected one lost the record. A live "
        "consumer reads the tail before it vanishes and then sees its offsets reused by new "
        "records after recovery (reused-offset, excused by the power loss like the loss). The "
        "cut also times out the producers' in-flight batches; librdkafka then bumps the "
        "producer epoch and sometimes resends batches the log already holds (open client "
        "bug librdkafka#4953): the scenario accepts that known bug, so such duplicates are "
        "named and counted but leave the verdict valid; any other duplicate does not. "
        "After the cut the producer's idempotence state can become fatal and the workload "
        "recreates the client under a new producer id; when its first batch in a partition "
        "fails across a leader move and a later one succeeds, the new leader holds only the "
        "later one and librdkafka reports the first delivered without an offset (open "
        "client bug confluent-kafka-go#921; 51 records in 1 of ~10 runs here): accepted "
        "too, only for a new client's records acknowledged without an offset below its "
        "first offset-bearing acknowledgement in that partition. "
        "The workload ends 10 s after the replicas agree again (180 s at most), so new "
        "records are written where the tail was."
    ),
    config={"acks": "all", "replication_factor": 3, "min_insync": 2, "unclean": False,
            # An upper bound: the workload ends 10 s (settle) after the script. With a
            # fixed 60 s, a slow machine (three JVMs restarting and recovering their logs)
            # ended the workload before the cluster took writes again, so no new record
            # reused a vanished offset and the expected reused-offset was not seen.
            "idempotence": True, "duration": 180.0, "rate": 150.0, "faults": [],
            "consumers": 1,
            # The scenario is about Kafka's recovery. Its power cut times out in-flight
            # batches; the idempotent librdkafka producer then bumps its epoch and resends
            # batches the log already holds (1 of 4 runs here), or, once recreated under a
            # new producer id, loses its first batch in a partition across a leader move
            # while reporting it delivered: records these known client bugs explain stay
            # counted and named, and only they are accepted.
            # Kafka's own missing unclean recovery (the doc above) likewise.
            "accept_known": [*LEADER_MOVE_CLIENT_BUGS, UNCLEAN_RECOVERY],
            # A rolled segment is flushed; its recovery point reaches disk within 1 s instead
            # of Kafka's 60 s, so the cut loses what Kafka really never fsynced.
            "topic_config": {"segment.ms": str(SEGMENT_MS)},
            "broker_config": {"log.flush.offset.checkpoint.interval.ms": "1000"}},
    script=power_loss_script,
    script_faults=("power-loss",),
    settle_s=10.0,
    expect=power_loss_expect,
    mechanism=[{"kind": "fault", "fault": "power-loss", "after": "situation"}],
)
