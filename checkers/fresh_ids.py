"""A fresh producer id's first records in a partition: the fact ``fresh_producer_id_head``
of contract/known_bugs.py (confluent-kafka-go#921).

A partition leader with no state for a producer id accepts its first batch at any sequence.
When a new client's first batch in a partition fails across a leader move and a later batch
reaches the new leader first, the log holds the later batch only, and librdkafka reports the
first one delivered: implicitly acked by the later success, without an offset. So the records
the bug can lose are, per client and partition, the ones acknowledged without an offset below
the client's first seq acknowledged *with* an offset there.

Clients are told apart by seq: each client's first ``producer-epoch`` event names the first
seq it was given (``first_seq``). Records of a client whose start is not in the history
(an older history, statistics turned off) are never matched.

A leader also has no state for a producer id when a power loss cut the partition's log (its
producer state goes with it): the power-loss event's ``lost`` names the partitions it cut.
After such a cut the same race loses records of a client that is not new (seen in a
last-replica-standing run on Kafka 3.9.1: three records acknowledged without offsets 4 s
after the restart, the next batch stored). So the records acknowledged without an offset
after a cut of their partition, below the client's first seq acknowledged with an offset
there after that cut, match too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.events import PRODUCER_EPOCH, Event
from contract.faults import POWER_LOSS

from .observations import PartitionHistory

#: Clients per producer beyond which the starts are not matched at all: each start is a
#: term of one expression (a run recreates a client only after a fatal client error).
MAX_STARTS = 64
#: (partition, power loss) cuts beyond which none is matched: each is a term of one
#: expression too (a run has a few power losses; a topic of many partitions multiplies them).
MAX_CUTS = 256


def client_starts(events: Sequence[Event]) -> dict[int, list[int]]:
    """Producer -> the sorted first seqs of its clients (from their first ``producer-epoch``
    events); producers with more than :data:`MAX_STARTS` clients are left out."""
    out: dict[int, set[int]] = {}
    for e in events:
        if e.kind != PRODUCER_EPOCH or e.detail.get("bump"):
            continue
        try:
            producer, first = int(e.detail["producer"]), int(e.detail["first_seq"])
        except (KeyError, TypeError, ValueError):
            continue
        out.setdefault(producer, set()).add(first)
    return {p: sorted(s) for p, s in out.items() if len(s) <= MAX_STARTS}


def state_cuts(events: Sequence[Event],
               history: PartitionHistory | None = None) -> dict[str, list[int]]:
    """``"topic:partition"`` -> the sorted times of power losses that removed batches of that
    partition's log on the node that led it at recovery (the power-loss event's ``lost``:
    node -> partition directory ``topic-partition`` -> what was cut; the leader: the first
    one observed after the crash). A cut of a follower leaves the leader's producer state
    whole, so it cannot explain the bug. None at all beyond :data:`MAX_CUTS`."""
    out: dict[str, set[int]] = {}
    for e in events:
        if e.kind != POWER_LOSS or e.phase != "start":
            continue
        lost = e.detail.get("lost")
        for node, parts in (lost.items() if isinstance(lost, dict) else ()):
            for name, cut in (parts.items() if isinstance(parts, dict) else ()):
                topic, _, part = str(name).rpartition("-")
                if not (topic and part.isdigit() and isinstance(cut, dict)
                        and int(cut.get("removed_batches") or 0) > 0):
                    continue
                key = f"{topic}:{int(part)}"
                if history is not None and _leader_after(history, key, e.ts_ns) != str(node):
                    continue
                out.setdefault(key, set()).add(e.ts_ns)
    if sum(len(ts) for ts in out.values()) > MAX_CUTS:
        return {}
    return {tp: sorted(ts) for tp, ts in out.items()}


def _leader_after(history: PartitionHistory, key: str, ts_ns: int) -> str | None:
    """The first leader observed for the partition after ``ts_ns`` (None: none observed)."""
    for c in history.between(key, ts_ns + 1, 2**63 - 1):
        if c.leader >= 0:
            return str(c.leader)
    return None


#: How long after a leader change the observer may first show it (it samples a few times a
#: second; an answer can take a request timeout while the old leader is gone).
OBSERVER_LAG_NS = 2_000_000_000
#: Leader changes beyond which none is matched (each is a term of one expression).
MAX_MOVES = 2048


def leader_moves(history: PartitionHistory) -> dict[str, list[int]]:
    """``"topic:partition"`` -> the times the observer first showed a new leader or leader
    epoch; none at all beyond :data:`MAX_MOVES`."""
    out: dict[str, list[int]] = {}
    for key, changes in history.by_tp.items():
        for c in changes:
            if c.prev_leader is not None and (
                    c.leader != c.prev_leader
                    or (c.prev_epoch is not None and c.leader_epoch != c.prev_epoch)):
                out.setdefault(key, []).append(c.ts_ns)
    if sum(len(v) for v in out.values()) > MAX_MOVES:
        return {}
    return out


def moved_during(moves: dict[str, list[int]]) -> Column:
    """True on rows whose partition's leader changed after the record's first attempt and
    before its acknowledgement (as observed: up to :data:`OBSERVER_LAG_NS` later): the batch
    failed across a leader move, which is how the bug starts."""
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
    out: Column = F.lit(False)
    for key, times in sorted(moves.items()):
        for ts in times:
            out = out | ((tp == key) & (F.col("invoke_ns") < F.lit(ts))
                         & (F.col("complete_ns") + F.lit(OBSERVER_LAG_NS) >= F.lit(ts)))
    return F.coalesce(out, F.lit(False))


def _latest(thresholds: dict[Any, list[int]], key: Column, value: Column) -> Column:
    """The highest threshold of ``key`` at or below ``value``; null where none (thresholds
    ascending: the last match wins)."""
    out: Column = F.lit(None).cast("long")
    for k, values in sorted(thresholds.items()):
        for v in values:
            out = F.when((key == k) & (value >= v), F.lit(v)).otherwise(out)
    return out


def _head_keys(starts: dict[int, list[int]], cuts: dict[str, list[int]]) -> list[Column]:
    """Per row, the key of each head it may belong to (null where none):
    ``"producer:topic:partition:<client's first seq>"`` and
    ``"producer:topic:partition:cut<latest cut of the partition before complete_ns>"``."""
    prefix = F.concat_ws(":", F.col("producer").cast("string"), F.col("topic"),
                         F.col("partition").cast("string"))
    keys = []
    if starts:
        start = _latest(starts, F.col("producer"), F.col("seq"))
        keys.append(F.when(start.isNotNull(), F.concat_ws(":", prefix, start.cast("string"))))
    if cuts:
        tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
        cut = _latest(cuts, tp, F.col("complete_ns"))
        keys.append(F.when(cut.isNotNull(),
                           F.concat_ws(":", prefix, F.concat(F.lit("cut"), cut.cast("string")))))
    return keys


def first_offset_acks(writes: DataFrame, starts: dict[int, list[int]],
                      cuts: dict[str, list[int]] | None = None) -> dict[str, int]:
    """Head key (``_head_keys``) -> the lowest seq acknowledged with an offset under it: per
    client and partition, and per producer and partition since each cut (one aggregation
    of the acknowledged writes)."""
    keys = _head_keys(starts, cuts or {})
    if not keys:
        return {}
    rows = (writes.where((F.col("outcome") == "ok") & F.col("offset").isNotNull())
            .select(F.explode(F.array(*keys)).alias("key"), "seq")
            .where(F.col("key").isNotNull())
            .groupBy("key").agg(F.min("seq").alias("seq")).collect())
    return {str(r["key"]): int(r["seq"]) for r in rows}


def fresh_head(starts: dict[int, list[int]], firsts: dict[str, int],
               cuts: dict[str, list[int]] | None = None) -> Column:
    """The fact over anomaly rows: acknowledged without an offset, below the first
    offset-bearing acknowledgement (which exists) of its client in the partition, or of its
    producer there since the latest cut of the partition's log before the acknowledgement."""
    keys = _head_keys(starts, cuts or {})
    if not keys or not firsts:
        return F.lit(False)
    first_of = F.create_map(*[F.lit(x) for k, v in sorted(firsts.items()) for x in (k, v)])
    below = [F.coalesce(F.col("seq") < first_of[key], F.lit(False)) for key in keys]
    head = below[0] if len(below) == 1 else below[0] | below[1]
    return (F.col("outcome") == "ok") & F.col("offset").isNull() & head
