"""A consumer's step back onto the point a truncation replaced the log from, proven by the
records themselves.

A reader that finds its partition truncated under it (an unclean election, every replica
losing power) resets its position to the truncation point (KIP-320; librdkafka does it
silently) and reads on from there: a step back. positions.py excuses it when the reader
lands on an offset read as two records (a reused offset). When the old log held a
transaction marker at the truncation point (a control record no client returns) nobody read
two records there, and the step back stood unexcused though it was the reset. The records
prove it another way. A step of reader R back from offset h (read at poll ``prev_poll``) to
offset o is a reset to the truncation point o when

- the drain read exactly one record at o, the one R read there (the final log's), and that
  record's first write attempt came *after* R's read of h: when R read h > o the log held
  offsets up to h, so o held something else then — the log was replaced at or below o after
  that read; and
- at o', the highest offset below o where the drain read a record (o - 1, or lower where
  the final log holds control records: a transaction's marker), the drain read exactly one
  record, and R had read that same record there before the step back: the log was not
  replaced below o', and between o' and o the final log holds no record R could miss.

Then the step back loses nothing of the new log, which is what the client's reset must do.
Any part missing (R never read o', a record at o written before R's read of h, more than
one record drained) leaves the step back unexcused. The candidates are the
unexcused steps back among the collected anomaly rows (few): they are brought to the driver
and their proof is read from the reads and writes at their offsets and records only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.schemas import DRAIN_READER

#: The excuse a proven reset carries (the same word as positions.py's reused-offset reset).
EXCUSE = "truncation"
#: More candidate steps than this are not examined (each is a literal in the filters below):
#: they stay unexcused.
MAX_CANDIDATES = 2000
_KEY = ["topic", "partition", "reader", "offset", "prev_offset", "poll"]


def _key(d: dict[str, Any]) -> str:
    return "|".join(str(d[k]) for k in _KEY)


def proven_resets(rows: DataFrame, reads: DataFrame, writes: DataFrame,
                  open_kinds: set[str]) -> Column | None:
    """The condition that picks the rows of ``rows`` (anomaly rows, materialised) that are
    a step back proven to be a reset to a truncation point (above); None when there is
    none. ``open_kinds``: the kinds with rows left unexcused (no query without a step
    back among them)."""
    if "nonmonotonic-poll" not in open_kinds:
        return None
    cands = [r.asDict() for r in rows.where(
        (F.col("kind") == "nonmonotonic-poll") & ~F.coalesce(F.col("excused"), F.lit(False))
        & F.col("producer").isNotNull() & F.col("seq").isNotNull()
    ).select(*_KEY, "prev_poll", "event_ns", "producer", "seq").distinct()
        .limit(MAX_CANDIDATES + 1).collect()]
    if not cands or len(cands) > MAX_CANDIDATES:
        return None
    below = _drained_below(rows, reads, cands)
    for c in cands:
        c["below"] = below.get(_key(c))
    at = {(c["topic"], c["partition"], o) for c in cands
          for o in (c["offset"], c["below"], c["prev_offset"]) if o is not None}
    offsets = sorted({o for _, _, o in at})
    keys = sorted(f"{t}:{p}:{o}" for t, p, o in at)
    seen: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in reads.where(F.col("offset").isin(offsets)
                         & F.concat_ws(":", "topic", "partition", "offset").isin(keys)).select(
            "reader", "mode", "poll", "read_ns", "topic", "partition", "offset", "producer",
            "seq", "valid").collect():
        d = r.asDict()
        seen[(d["topic"], d["partition"], d["offset"])].append(d)
    packed = sorted({(c["producer"] << 40) + c["seq"] for c in cands})
    born = {(r["producer"], r["seq"]): r["born"] for r in writes.where(
        (F.col("producer").cast("long") * F.lit(1 << 40) + F.col("seq")).isin(packed))
        .groupBy("producer", "seq").agg(F.min("invoke_ns").alias("born")).collect()}
    proven = sorted(_key(c) for c in cands if _proves(c, seen, born))
    if not proven:
        return None
    return F.concat_ws("|", *[F.col(k).cast("string") for k in _KEY]).isin(proven)


def _drained_below(rows: DataFrame, reads: DataFrame,
                   cands: list[dict[str, Any]]) -> dict[str, int]:
    """Candidate key -> the highest offset below its landing offset where the drain read a
    record (one broadcast join of the drain's reads with the candidates)."""
    spark = rows.sparkSession
    steps = spark.createDataFrame(
        [(_key(c), c["topic"], c["partition"], c["offset"]) for c in cands],
        "key string, c_topic string, c_partition int, c_offset long")
    drain = reads.where((F.col("reader") == DRAIN_READER) | (F.col("mode") == DRAIN_READER))
    return {r["key"]: r["at"] for r in drain.join(
        F.broadcast(steps), (F.col("topic") == F.col("c_topic"))
        & (F.col("partition") == F.col("c_partition")) & (F.col("offset") < F.col("c_offset")))
        .groupBy("key").agg(F.max("offset").alias("at")).collect()}


def _rec(d: dict[str, Any]) -> tuple[int, int] | None:
    ok = bool(d["valid"]) and d["producer"] is not None and d["seq"] is not None
    return (d["producer"], d["seq"]) if ok else None


def _drained(reads: list[dict[str, Any]]) -> set[tuple[int, int] | None]:
    return {_rec(d) for d in reads if d["reader"] == DRAIN_READER or d["mode"] == DRAIN_READER}


def _proves(c: dict[str, Any], seen: dict[tuple[str, int, int], list[dict[str, Any]]],
            born: dict[tuple[int, int], int]) -> bool:
    t, p, o, who = c["topic"], c["partition"], c["offset"], c["reader"]
    rec, o_below = (c["producer"], c["seq"]), c["below"]
    if o_below is None:
        return False
    below = _drained(seen.get((t, p, o_below), []))
    if _drained(seen.get((t, p, o), [])) != {rec} or len(below) != 1 or None in below:
        return False
    h_ns = [d["read_ns"] for d in seen.get((t, p, c["prev_offset"]), [])
            if d["reader"] == who and d["poll"] == c["prev_poll"]]
    if not h_ns or rec not in born or born[rec] <= max(h_ns):
        return False
    before = (c["poll"], c["event_ns"])
    return any(d["reader"] == who and _rec(d) in below and (d["poll"], d["read_ns"]) <= before
               for d in seen.get((t, p, o_below), []))
