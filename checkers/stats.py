"""Run statistics and a small downsampled timeseries for the report (checkers/README.md).

Everything here is aggregated on the cluster, one scan per table and purpose; only small
grouped rows (outcome × error × partition, reader × partition, time buckets) reach the
driver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.schemas import DRAIN_READER

from .together import together

#: At most this many timeseries points; the bucket width grows for long runs.
MAX_POINTS = 600
#: Resolution of the unavailability measure.
GAP_BUCKET_NS = 100_000_000


@dataclass(frozen=True)
class WriteSummary:
    """Writes by outcome, their time span, error names, and the partitions written."""

    ok: int
    fail: int
    info: int
    first_ns: int | None
    last_ns: int | None
    errors: dict[str, int]
    partitions: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    ok_without_offset: int = 0  # acknowledged without an offset (acks=0, implicit acks)
    #: "topic:partition" -> acknowledged writes sent to it (partitions with none left out)
    ok_by_partition: dict[str, int] = field(default_factory=dict)
    #: "topic:partition" -> the highest offset an acknowledged write was given there
    ok_last_offset: dict[str, int] = field(default_factory=dict)


def write_summary(writes: DataFrame) -> WriteSummary:
    """One aggregation of the writes by (outcome, error, topic, partition)."""
    rows = writes.groupBy("outcome", "error", "topic", "partition").agg(
        F.count(F.lit(1)).alias("n"),
        F.min("invoke_ns").alias("first"),
        F.max(F.greatest("invoke_ns", "complete_ns")).alias("last"),
        F.count(F.when(F.col("offset").isNull(), 1)).alias("no_offset"),
        F.max("offset").alias("max_offset"),
    ).collect()
    by_outcome = {"ok": 0, "fail": 0, "info": 0}
    errors: dict[str, int] = {}
    parts, topics = set(), set()
    firsts, lasts = [], []
    ok_no_offset = 0
    ok_parts: dict[str, int] = {}
    ok_last: dict[str, int] = {}
    for r in rows:
        if r["outcome"] in by_outcome:
            by_outcome[r["outcome"]] += int(r["n"])
        if r["outcome"] == "ok":
            ok_no_offset += int(r["no_offset"] or 0)
            if r["topic"] is not None and r["partition"] is not None:
                key = f"{r['topic']}:{r['partition']}"
                ok_parts[key] = ok_parts.get(key, 0) + int(r["n"])
                if r["max_offset"] is not None:
                    ok_last[key] = max(ok_last.get(key, -1), int(r["max_offset"]))
        if r["error"] is not None:
            errors[r["error"]] = errors.get(r["error"], 0) + int(r["n"])
        if r["topic"] is not None:
            topics.add(r["topic"])
            if r["partition"] is not None:
                parts.add(f"{r['topic']}:{r['partition']}")
        if r["first"] is not None:
            firsts.append(r["first"])
        if r["last"] is not None:
            lasts.append(r["last"])
    return WriteSummary(
        ok=by_outcome["ok"], fail=by_outcome["fail"], info=by_outcome["info"],
        first_ns=min(firsts, default=None), last_ns=max(lasts, default=None),
        errors=errors, partitions=sorted(parts), topics=sorted(topics),
        ok_without_offset=ok_no_offset, ok_by_partition=dict(sorted(ok_parts.items())),
        ok_last_offset=dict(sorted(ok_last.items())),
    )


@dataclass(frozen=True)
class ReadSummary:
    per_reader: dict[str, int]
    topics: list[str]
    #: reader -> each "topic:partition" it read a record of -> when it last did (``read_ns``)
    last_read_ns: dict[str, dict[str, int]] = field(default_factory=dict)
    #: reader -> each "topic:partition" it read a record of -> the highest offset it read
    read_to: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def drained(self) -> dict[str, int]:
        """"topic:partition" -> the highest offset the drain read."""
        return self.read_to.get(DRAIN_READER, {})


def read_summary(reads: DataFrame) -> ReadSummary:
    """One aggregation of the reads by (reader, topic, partition)."""
    rows = reads.groupBy("reader", "topic", "partition").agg(
        F.count(F.lit(1)).alias("n"), F.max("offset").alias("max_offset"),
        F.max("read_ns").alias("last_ns")
    ).collect()
    per_reader: dict[str, int] = {}
    topics = set()
    last_ns: dict[str, dict[str, int]] = {}
    read_to: dict[str, dict[str, int]] = {}
    for r in rows:
        per_reader[str(r["reader"])] = per_reader.get(str(r["reader"]), 0) + int(r["n"])
        if r["topic"] is not None:
            topics.add(r["topic"])
            last_ns.setdefault(str(r["reader"]), {})[f"{r['topic']}:{r['partition']}"] = (
                int(r["last_ns"] or 0))
            if r["max_offset"] is not None:
                read_to.setdefault(str(r["reader"]), {})[
                    f"{r['topic']}:{r['partition']}"] = int(r["max_offset"])
    return ReadSummary(per_reader, sorted(topics),
                       dict(sorted(last_ns.items())), dict(sorted(read_to.items())))


def _round(v: float | None) -> float | None:
    return None if v is None else round(float(v), 3)


#: Latency histogram bins: 5 per doubling from 0.1 ms (percentiles within ~15 %).
_BINS_PER_DOUBLING = 5
_LAT_FLOOR_MS = 0.1


def _lat_bin(lat_ms: F.Column) -> F.Column:
    return F.floor(F.log2(F.greatest(lat_ms, F.lit(_LAT_FLOOR_MS)) / _LAT_FLOOR_MS)
                   * _BINS_PER_DOUBLING).cast("int")


def _bin_ms(b: int) -> float:
    """The upper edge of a latency bin, in ms."""
    return float(_LAT_FLOOR_MS * 2 ** ((b + 1) / _BINS_PER_DOUBLING))


def _percentile(hist: dict[int, int], q: float) -> float | None:
    total = sum(hist.values())
    if not total:
        return None
    need, seen = q * total, 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= need:
            return round(_bin_ms(b), 3)
    return round(_bin_ms(max(hist)), 3)


def timeseries(writes: DataFrame, reads: DataFrame, t0: int, t1: int
               ) -> tuple[dict[str, Any], float, float]:
    """Per-bucket write outcomes (by completion time), reads and ok-latency percentiles
    (from a log-binned histogram); and (longest, total) seconds within [t0, t1] with no
    acknowledgement (0.1 s steps). Three small hash aggregations, submitted together."""
    span = max(t1 - t0, 1)
    width = max(1_000_000_000, math.ceil(span / MAX_POINTS / 1e9) * 1_000_000_000)
    when = F.coalesce(F.col("complete_ns"), F.col("invoke_ns"))
    bucket = F.floor((when - F.lit(t0)) / F.lit(width)).cast("long")
    ok = F.col("outcome") == "ok"
    lat_ms = (F.col("complete_ns") - F.col("invoke_ns")) / 1e6
    by_bucket = (
        writes.where(when.isNotNull())
        .groupBy(bucket.alias("b"), F.col("outcome"),
                 F.when(ok & F.col("complete_ns").isNotNull(), _lat_bin(lat_ms)).alias("lb"))
        .agg(F.count(F.lit(1)).alias("n"), F.max(F.when(ok, lat_ms)).alias("max"))
    )
    acked_steps = (
        writes.where(ok & F.col("complete_ns").between(t0, t1))
        .select(F.floor(F.col("complete_ns") / GAP_BUCKET_NS).cast("long").alias("s"))
        .distinct()
    )
    rb = F.floor((F.col("read_ns") - F.lit(t0)) / F.lit(width)).cast("long")
    reads_by_bucket = reads.where(F.col("read_ns").isNotNull()).groupBy(rb.alias("b")).count()
    w, steps, r = together(by_bucket.collect, acked_steps.collect, reads_by_bucket.collect)
    reads_by = {int(x["b"]): int(x["count"]) for x in r}
    counts: dict[int, dict[str, int]] = {}
    hists: dict[int, dict[int, int]] = {}
    maxes: dict[int, float] = {}
    for x in w:
        b = int(x["b"])
        c = counts.setdefault(b, {"ok": 0, "fail": 0, "info": 0})
        if x["outcome"] in c:
            c[x["outcome"]] += int(x["n"])
        if x["lb"] is not None:
            hists.setdefault(b, {})[int(x["lb"])] = int(x["n"])
        if x["max"] is not None:
            maxes[b] = max(maxes.get(b, 0.0), float(x["max"]))
    rows = []
    for b in sorted(set(counts) | set(reads_by)):
        c = counts.get(b, {"ok": 0, "fail": 0, "info": 0})
        h = hists.get(b, {})
        rows.append({"t_s": round(b * width / 1e9, 3), **c, "reads": reads_by.get(b, 0),
                     "latency_p50_ms": _percentile(h, 0.5),
                     "latency_p99_ms": _percentile(h, 0.99),
                     "latency_max_ms": _round(maxes.get(b))})
    series = {"t0_ns": t0, "bucket_s": width / 1e9,
              "columns": ["t_s", "ok", "fail", "info", "reads", "latency_p50_ms",
                          "latency_p99_ms", "latency_max_ms"],
              "points": rows}
    longest, total = _gaps(sorted(int(x["s"]) for x in steps), t0, t1)
    return series, longest, total


def _gaps(acked: list[int], lo: int, hi: int) -> tuple[float, float]:
    """Longest and total runs of 0.1 s steps in [lo, hi] without an acknowledgement."""
    if hi <= lo:
        return 0.0, 0.0
    first, last = lo // GAP_BUCKET_NS, (hi - 1) // GAP_BUCKET_NS  # [lo, hi)
    edges = [first - 1, *acked, last + 1]
    gaps = [max(0, b2 - b1 - 1) for b1, b2 in zip(edges, edges[1:], strict=False)]
    step = GAP_BUCKET_NS / 1e9
    return round(max(gaps, default=0) * step, 3), round(sum(gaps) * step, 3)
