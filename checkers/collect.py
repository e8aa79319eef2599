"""Bring the findings to the driver: exact counts per kind (one small aggregation) and up to
32 examples per kind (a window over the anomaly rows only), then the reads behind each
example (one semi-join against the examples' identities and offsets)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .kinds import MAX_EXAMPLES

READS_PER_EXAMPLE = 8
IDENTITY_KINDS = {"lost", "unseen", "duplicate", "offset-mismatch", "reorder",
                  "failed-visible", "aborted-read"}


@dataclass
class Findings:
    """Counts (exact), excused counts, and raw example rows per kind."""

    counts: dict[str, int]
    excused: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]


def collect_findings(frames: list[DataFrame]) -> Findings:
    """Counts and examples of the union of all anomaly rows (materialised once)."""
    rows = reduce(DataFrame.unionByName, frames).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        agg = rows.groupBy("kind").agg(
            F.sum("n").alias("n"),
            F.sum(F.when(F.col("excused"), F.col("n")).otherwise(0)).alias("excused"),
        ).collect()
        counts = {r["kind"]: int(r["n"] or 0) for r in agg}
        excused = {r["kind"]: int(r["excused"] or 0) for r in agg}
        examples: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if counts:
            win = Window.partitionBy("kind").orderBy(
                F.col("excused").asc(), F.col("complete_ns").asc_nulls_last(),
                F.col("event_ns").asc_nulls_last(), "topic", "partition", "offset",
                "producer", "seq", "reader", "poll",
            )
            top = rows.withColumn("rn", F.row_number().over(win)).where(
                F.col("rn") <= MAX_EXAMPLES
            ).orderBy("kind", "rn").collect()
            for r in top:
                d = r.asDict()
                d.pop("rn", None)
                examples[d["kind"]].append(d)
        return Findings(counts, excused, dict(examples))
    finally:
        rows.unpersist()


def attach_reads(spark: SparkSession, reads: DataFrame, findings: Findings) -> None:
    """Add the reads of each example's record (identity kinds) or offset (others)."""
    idents = {(e["producer"], e["seq"]) for k, ex in findings.examples.items() for e in ex
              if e.get("producer") is not None and e.get("seq") is not None}
    positions = {(e["topic"], e["partition"], e["offset"])
                 for k, ex in findings.examples.items() if k not in IDENTITY_KINDS for e in ex
                 if e.get("topic") is not None and e.get("offset") is not None}
    by_ident: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    by_pos: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    cols = ["reader", "topic", "partition", "offset", "read_ns", "producer", "seq", "valid"]
    limit = 64 * MAX_EXAMPLES * 12
    if idents:
        keys = spark.createDataFrame(sorted(idents), "producer int, seq long")
        for r in reads.join(F.broadcast(keys), ["producer", "seq"], "left_semi").select(
            *cols
        ).orderBy("read_ns").limit(limit).collect():
            by_ident[(r["producer"], r["seq"])].append(r.asDict())
    if positions:
        keys = spark.createDataFrame(sorted(positions),
                                     "topic string, partition int, offset long")
        on = ["topic", "partition", "offset"]
        for r in reads.join(F.broadcast(keys), on, "left_semi").select(
            *cols
        ).orderBy("read_ns").limit(limit).collect():
            by_pos[(r["topic"], r["partition"], r["offset"])].append(r.asDict())
    for kind, exs in findings.examples.items():
        for e in exs:
            if kind in IDENTITY_KINDS or kind == "unexpected" and e.get("producer") is not None:
                found = by_ident.get((e.get("producer"), e.get("seq")), [])
            else:
                found = by_pos.get((e.get("topic"), e.get("partition"), e.get("offset")), [])
            e["_reads"] = found
