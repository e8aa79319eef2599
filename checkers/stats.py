"""Run statistics and a small downsampled timeseries for the report (checkers/README.md).

Everything here is aggregated on the cluster; only per-bucket rows (at most a few thousand)
come to the driver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: At most this many timeseries points; the bucket width grows for long runs.
MAX_POINTS = 600
#: Resolution of the unavailability measure.
GAP_BUCKET_NS = 100_000_000


@dataclass(frozen=True)
class WriteSummary:
    ok: int
    fail: int
    info: int
    first_ns: int | None
    last_ns: int | None
    errors: dict[str, int]


def write_summary(writes: DataFrame) -> WriteSummary:
    """Counts by outcome, the time span, and counts by error name."""
    row = writes.agg(
        F.sum(F.when(F.col("outcome") == "ok", 1).otherwise(0)).alias("ok"),
        F.sum(F.when(F.col("outcome") == "fail", 1).otherwise(0)).alias("fail"),
        F.sum(F.when(F.col("outcome") == "info", 1).otherwise(0)).alias("info"),
        F.min("invoke_ns").alias("first"),
        F.max(F.greatest("invoke_ns", "complete_ns")).alias("last"),
    ).collect()[0]
    errs = writes.where(F.col("error").isNotNull()).groupBy("error").count().limit(200).collect()
    return WriteSummary(
        ok=int(row["ok"] or 0), fail=int(row["fail"] or 0), info=int(row["info"] or 0),
        first_ns=row["first"], last_ns=row["last"],
        errors={r["error"]: int(r["count"]) for r in errs},
    )


def read_summary(reads: DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """Reads per reader, and the drain's highest offset per "topic:partition"."""
    per_reader = reads.groupBy("reader").count().collect()
    drained = (
        reads.where(F.col("reader") == "drain")
        .groupBy("topic", "partition").agg(F.max("offset").alias("max_offset")).collect()
    )
    return (
        {str(r["reader"]): int(r["count"]) for r in per_reader},
        {f"{r['topic']}:{r['partition']}": int(r["max_offset"]) for r in drained},
    )


def written_partitions(writes: DataFrame) -> list[str]:
    rows = writes.select("topic", "partition").distinct().collect()
    return sorted(f"{r['topic']}:{r['partition']}" for r in rows if r["topic"] is not None)


def timeseries(writes: DataFrame, reads: DataFrame, t0: int, t1: int) -> dict[str, Any]:
    """Per-bucket write outcomes (by completion time), reads, and ok-latency percentiles."""
    span = max(t1 - t0, 1)
    width = max(1_000_000_000, math.ceil(span / MAX_POINTS / 1e9) * 1_000_000_000)
    when = F.coalesce(F.col("complete_ns"), F.col("invoke_ns"))
    bucket = F.floor((when - F.lit(t0)) / F.lit(width)).cast("long")
    lat_ms = (F.col("complete_ns") - F.col("invoke_ns")) / 1e6
    w = (
        writes.where(when.isNotNull())
        .groupBy(bucket.alias("b"))
        .agg(
            F.sum(F.when(F.col("outcome") == "ok", 1).otherwise(0)).alias("ok"),
            F.sum(F.when(F.col("outcome") == "fail", 1).otherwise(0)).alias("fail"),
            F.sum(F.when(F.col("outcome") == "info", 1).otherwise(0)).alias("info"),
            F.percentile_approx(F.when(F.col("outcome") == "ok", lat_ms), [0.5, 0.99], 200)
            .alias("p"),
            F.max(F.when(F.col("outcome") == "ok", lat_ms)).alias("max"),
        )
        .collect()
    )
    rb = F.floor((F.col("read_ns") - F.lit(t0)) / F.lit(width)).cast("long")
    r = reads.where(F.col("read_ns").isNotNull()).groupBy(rb.alias("b")).count().collect()
    reads_by = {int(x["b"]): int(x["count"]) for x in r}
    points: dict[int, dict[str, Any]] = {}
    for x in w:
        p = x["p"] or [None, None]
        points[int(x["b"])] = {
            "ok": int(x["ok"]), "fail": int(x["fail"]), "info": int(x["info"]),
            "latency_p50_ms": _round(p[0]), "latency_p99_ms": _round(p[1]),
            "latency_max_ms": _round(x["max"]),
        }
    keys = sorted(set(points) | set(reads_by))
    rows = []
    for b in keys:
        pt = points.get(b, {"ok": 0, "fail": 0, "info": 0, "latency_p50_ms": None,
                            "latency_p99_ms": None, "latency_max_ms": None})
        rows.append({"t_s": round(b * width / 1e9, 3), **pt, "reads": reads_by.get(b, 0)})
    return {"t0_ns": t0, "bucket_s": width / 1e9,
            "columns": ["t_s", "ok", "fail", "info", "reads", "latency_p50_ms",
                        "latency_p99_ms", "latency_max_ms"],
            "points": rows}


def _round(v: float | None) -> float | None:
    return None if v is None else round(float(v), 3)


def unavailability(writes: DataFrame, lo: int, hi: int) -> tuple[float, float]:
    """(longest, total) seconds inside [lo, hi] with no acknowledgement, at 0.1 s resolution."""
    if hi <= lo:
        return 0.0, 0.0
    b = F.floor(F.col("complete_ns") / F.lit(GAP_BUCKET_NS)).cast("long")
    rows = (
        writes.where((F.col("outcome") == "ok") & F.col("complete_ns").between(lo, hi))
        .select(b.alias("b")).distinct().collect()
    )
    acked = sorted(int(r["b"]) for r in rows)
    first, last = lo // GAP_BUCKET_NS, hi // GAP_BUCKET_NS
    edges = [first - 1, *acked, last + 1]
    gaps = [max(0, b2 - b1 - 1) for b1, b2 in zip(edges, edges[1:], strict=False)]
    step = GAP_BUCKET_NS / 1e9
    return round(max(gaps, default=0) * step, 3), round(sum(gaps) * step, 3)
