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
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.events import PRODUCER_EPOCH, Event

#: Clients per producer beyond which the starts are not matched at all: each start is a
#: term of one expression (a run recreates a client only after a fatal client error).
MAX_STARTS = 64


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


def fresh_head(starts: dict[int, list[int]], firsts: dict[str, int]) -> Column:
    """The fact over anomaly rows: acknowledged without an offset, below its client's first
    offset-bearing acknowledgement in the partition (which exists)."""
    if not starts or not firsts:
        return F.lit(False)
    start = start_of(starts, F.col("producer"), F.col("seq"))
    key = _key(F.col("producer"), F.col("topic"), F.col("partition"), start)
    first = F.create_map(*[F.lit(x) for k, v in sorted(firsts.items())
                           for x in (k, v)])[key]
    return ((F.col("outcome") == "ok") & F.col("offset").isNull() & start.isNotNull()
            & first.isNotNull() & (F.col("seq") < first))
