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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.events import PRODUCER_EPOCH, Event

POWER_LOSS = "power-loss"  # the fault kind (contract/faults.py)

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


def start_of(starts: dict[int, list[int]], producer: Column, seq: Column) -> Column:
    """The first seq of the client that sent (``producer``, ``seq``); null where unknown."""
    out: Column = F.lit(None).cast("long")
    for p, firsts in sorted(starts.items()):
        for first in firsts:  # ascending: the last match is the highest start <= seq
            out = F.when((producer == p) & (seq >= first), F.lit(first)).otherwise(out)
    return out


def _key(producer: Column, topic: Column, partition: Column, start: Column) -> Column:
    return F.concat_ws(":", producer.cast("string"), topic, partition.cast("string"),
                       start.cast("string"))


def first_offset_acks(writes: DataFrame, starts: dict[int, list[int]]) -> dict[str, int]:
    """``"producer:topic:partition:start"`` -> the lowest seq that client had acknowledged
    with an offset in that partition (one aggregation of the acknowledged writes of the
    producers whose clients are known)."""
    if not starts:
        return {}
    start = start_of(starts, F.col("producer"), F.col("seq"))
    rows = (writes.where((F.col("outcome") == "ok") & F.col("offset").isNotNull()
                         & F.col("producer").isin(sorted(starts)) & start.isNotNull())
            .select(_key(F.col("producer"), F.col("topic"), F.col("partition"), start)
                    .alias("key"), "seq")
            .groupBy("key").agg(F.min("seq").alias("seq")).collect())
    return {str(r["key"]): int(r["seq"]) for r in rows}


def state_cuts(events: Sequence[Event]) -> dict[str, list[int]]:
    """``"topic:partition"`` -> the sorted times of power losses that removed batches of that
    partition's log on some node (the power-loss event's ``lost``: node -> partition
    directory ``topic-partition`` -> what was cut); none at all beyond :data:`MAX_CUTS`."""
    out: dict[str, set[int]] = {}
    for e in events:
        if e.kind != POWER_LOSS or e.phase != "start":
            continue
        lost = e.detail.get("lost")
        for parts in (lost.values() if isinstance(lost, dict) else ()):
            for name, cut in (parts.items() if isinstance(parts, dict) else ()):
                topic, _, part = str(name).rpartition("-")
                if topic and part.isdigit() and isinstance(cut, dict) \
                        and int(cut.get("removed_batches") or 0) > 0:
                    out.setdefault(f"{topic}:{int(part)}", set()).add(e.ts_ns)
    if sum(len(ts) for ts in out.values()) > MAX_CUTS:
        return {}
    return {tp: sorted(ts) for tp, ts in out.items()}


def cut_before(cuts: dict[str, list[int]], topic: Column, partition: Column,
               t: Column) -> Column:
    """The latest cut of (``topic``, ``partition``) at or before ``t``; null where none."""
    out: Column = F.lit(None).cast("long")
    tp = F.concat_ws(":", topic, partition.cast("string"))
    for key, times in sorted(cuts.items()):
        for ts in times:  # ascending: the last match is the latest cut <= t
            out = F.when((tp == key) & (t >= ts), F.lit(ts)).otherwise(out)
    return out


def _cut_key(cut: Column) -> Column:
    return _key(F.col("producer"), F.col("topic"), F.col("partition"),
                F.concat(F.lit("cut"), cut.cast("string")))


def first_offset_acks_after_cuts(writes: DataFrame, cuts: dict[str, list[int]]
                                 ) -> dict[str, int]:
    """``"producer:topic:partition:cut<ns>"`` -> the lowest seq that producer had
    acknowledged with an offset in that partition after that cut (and before the next)."""
    if not cuts:
        return {}
    cut = cut_before(cuts, F.col("topic"), F.col("partition"), F.col("complete_ns"))
    rows = (writes.where((F.col("outcome") == "ok") & F.col("offset").isNotNull()
                         & cut.isNotNull())
            .select(_cut_key(cut).alias("key"), "seq")
            .groupBy("key").agg(F.min("seq").alias("seq")).collect())
    return {str(r["key"]): int(r["seq"]) for r in rows}


def _below_first(firsts: dict[str, int], key: Column) -> Column:
    first = F.create_map(*[F.lit(x) for k, v in sorted(firsts.items()) for x in (k, v)])[key]
    return first.isNotNull() & (F.col("seq") < first)


def fresh_head(starts: dict[int, list[int]], firsts: dict[str, int],
               cuts: dict[str, list[int]] | None = None) -> Column:
    """The fact over anomaly rows: acknowledged without an offset, below its client's first
    offset-bearing acknowledgement in the partition (which exists) — counted from the
    client's start, or from the latest cut of the partition's log before the
    acknowledgement (``cuts``; ``firsts`` then also holds the keys of
    :func:`first_offset_acks_after_cuts`)."""
    heads: list[Column] = []
    if starts and firsts:
        start = start_of(starts, F.col("producer"), F.col("seq"))
        key = _key(F.col("producer"), F.col("topic"), F.col("partition"), start)
        heads.append(start.isNotNull() & _below_first(firsts, key))
    if cuts and firsts:
        cut = cut_before(cuts, F.col("topic"), F.col("partition"), F.col("complete_ns"))
        heads.append(cut.isNotNull() & _below_first(firsts, _cut_key(cut)))
    if not heads:
        return F.lit(False)
    head = heads[0] if len(heads) == 1 else heads[0] | heads[1]
    return (F.col("outcome") == "ok") & F.col("offset").isNull() & head
