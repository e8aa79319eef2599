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

from contract.anomalies import MAX_EXAMPLES

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


def _packed(producer: F.Column, seq: F.Column) -> F.Column:
    return producer.cast("long") * F.lit(1 << 40) + seq


def attach_reads(spark: SparkSession, reads: DataFrame, findings: Findings) -> None:
    """Add the reads of each example's record (identity kinds) or offset (others), in one
    filtered scan of the reads (the keys are a few hundred literals at most)."""
    idents = {(e["producer"], e["seq"]) for ex in findings.examples.values() for e in ex
              if e.get("producer") is not None and e.get("seq") is not None}
    positions = {(e["topic"], e["partition"], e["offset"])
                 for k, ex in findings.examples.items() if k not in IDENTITY_KINDS for e in ex
                 if e.get("topic") is not None and e.get("offset") is not None}
    if not idents and not positions:
        return
    cond = F.lit(False)
    if idents:
        cond = cond | _packed(F.col("producer"), F.col("seq")).isin(
            sorted((p << 40) + s for p, s in idents))
    if positions:
        # the cheap long test first: the string key is built only for rows that pass it
        cond = cond | (F.col("offset").isin(sorted({o for _, _, o in positions}))
                       & F.concat_ws(":", "topic", "partition", "offset").isin(
                           sorted(f"{t}:{p}:{o}" for t, p, o in positions)))
    cols = ["reader", "topic", "partition", "offset", "read_ns", "producer", "seq", "valid"]
    by_ident: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    by_pos: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    limit = 64 * MAX_EXAMPLES * 12
    for r in reads.where(cond).select(*cols).orderBy("read_ns").limit(limit).collect():
        d = r.asDict()
        if (d["producer"], d["seq"]) in idents:
            by_ident[(d["producer"], d["seq"])].append(d)
        if (d["topic"], d["partition"], d["offset"]) in positions:
            by_pos[(d["topic"], d["partition"], d["offset"])].append(d)
    for kind, exs in findings.examples.items():
        for e in exs:
            if kind in IDENTITY_KINDS or kind == "unexpected" and e.get("producer") is not None:
                found = by_ident.get((e.get("producer"), e.get("seq")), [])
            else:
                found = by_pos.get((e.get("topic"), e.get("partition"), e.get("offset")), [])
            e["_reads"] = found
