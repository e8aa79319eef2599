"""Bring the findings to the driver: exact counts per kind (one small aggregation) and up to
32 examples per kind (a window over the anomaly rows only), then the reads behind each
example (one semi-join against the examples' identities and offsets)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.anomalies import MAX_EXAMPLES, RECORD, SUBJECTS, WRITE

from .batch_ids import finding, with_batch_ids
from .engines import keep, release
from .truncation_reset import EXCUSE as RESET

READS_PER_EXAMPLE = 8
#: Kinds about one write: their examples' reads are looked up by (producer, seq).
IDENTITY_KINDS = frozenset(k for k, subject in SUBJECTS.items() if subject == WRITE)


@dataclass
class Findings:
    """Counts (exact), excused counts, and raw example rows per kind; ``by_bug`` splits
    each kind's count by the known bug that explains the records (None: no known bug) into
    (count, excused)."""

    counts: dict[str, int]
    excused: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]
    by_bug: dict[str, dict[str | None, tuple[int, int]]] = field(default_factory=dict)
    # kind -> the broker's finding (batch_ids.py) -> exact count of its records
    findings: dict[str, dict[str, int]] = field(default_factory=dict)

    def known_bugs(self, kind: str) -> dict[str, int]:
        """Known-bug id -> exact count of the kind's records it explains."""
        return {b: n for b, (n, _) in sorted(self.by_bug.get(kind, {}).items(),
                                             key=lambda kv: str(kv[0])) if b is not None}


def collect_findings(frames: list[DataFrame], known: Column | None = None,
                     accepted: tuple[str, ...] = (),
                     excuses: Sequence[tuple[Column, str]] = (),
                     batches: DataFrame | None = None,
                     late: Callable[[DataFrame, set[str]], Column | None] | None = None
                     ) -> Findings:
    """Counts and examples of the union of all anomaly rows (materialised once).

    ``known`` (checkers/known.py) names the known bug explaining each row; counts are
    split by it exactly, in the same aggregation. ``excuses``: (condition, excuse) pairs that
    excuse single rows besides their checks' own (a power loss proven to have lost the
    record, power_proof.py; the record's own producer's settings). Examples come forbidden
    first: records neither excused nor explained, then those a known bug explains, then those of an
    ``accepted`` known bug, then excused ones. ``late``: a proof read from the materialised
    rows themselves (truncation_reset.py: a few candidate rows brought to the driver), asked
    only when some kind has rows left unexcused (given as the set of those kinds); the rows
    it picks are excused as a truncation reset, and no known bug names them."""
    union = reduce(DataFrame.unionByName, frames)
    for cond, name in excuses:
        proven = F.coalesce(cond, F.lit(False)) & ~F.col("excused")
        union = union.withColumns({
            "excuse": F.when(proven, F.lit(name)).otherwise(F.col("excuse")),
            "excused": F.col("excused") | proven})
    # the copies' batch ids (batch_ids.py): evidence for a known bug's facts, and the
    # broker's findings
    union = with_batch_ids(union, batches).withColumn("finding", finding())
    union = union.withColumn("known_bug", known if known is not None
                             else F.lit(None).cast("string"))
    kept = rows = keep(union)
    try:
        agg = _tally(rows)
        open_kinds = {r["kind"] for r in agg if int(r["n"] or 0) > int(r["excused"] or 0)}
        # the late proof only where its kind has rows left unexcused (most runs: none)
        resets = late(kept, open_kinds) if late is not None and open_kinds else None
        if resets is not None:  # a projection of the kept rows: cheap to read again
            reset = F.coalesce(resets, F.lit(False)) & ~F.col("excused")
            rows = kept.withColumns({
                "excuse": F.when(reset, F.lit(RESET)).otherwise(F.col("excuse")),
                "known_bug": F.when(reset, F.lit(None).cast("string"))
                .otherwise(F.col("known_bug")),
                "excused": F.col("excused") | reset})
            agg = _tally(rows)
        counts: dict[str, int] = defaultdict(int)
        excused: dict[str, int] = defaultdict(int)
        by_bug: dict[str, dict[str | None, tuple[int, int]]] = defaultdict(dict)
        found: dict[str, dict[str, int]] = defaultdict(dict)
        for r in agg:
            n, ex = int(r["n"] or 0), int(r["excused"] or 0)
            counts[r["kind"]] += n
            excused[r["kind"]] += ex
            was = by_bug[r["kind"]].get(r["known_bug"], (0, 0))
            by_bug[r["kind"]][r["known_bug"]] = (was[0] + n, was[1] + ex)
            if r["finding"] is not None:
                found[r["kind"]][r["finding"]] = found[r["kind"]].get(r["finding"], 0) + n
        examples: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if counts:
            is_accepted = (F.col("known_bug").isin(list(accepted)) if accepted
                           else F.lit(False))
            win = Window.partitionBy("kind").orderBy(
                F.col("excused").asc(), F.coalesce(is_accepted, F.lit(False)).asc(),
                F.col("known_bug").isNotNull().asc(), F.col("complete_ns").asc_nulls_last(),
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
        return Findings(dict(counts), dict(excused), dict(examples), dict(by_bug),
                        dict(found))
    finally:
        release(kept)


def _tally(rows: DataFrame) -> list[Row]:
    """Rows and excused rows per (kind, known bug, finding): one small aggregation."""
    return rows.groupBy("kind", "known_bug", "finding").agg(
        F.sum("n").alias("n"),
        F.sum(F.when(F.col("excused"), F.col("n")).otherwise(0)).alias("excused"),
    ).collect()


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
            if kind in IDENTITY_KINDS or SUBJECTS.get(kind) == RECORD \
                    and e.get("producer") is not None:
                found = by_ident.get((e.get("producer"), e.get("seq")), [])
            else:
                found = by_pos.get((e.get("topic"), e.get("partition"), e.get("offset")), [])
            e["_reads"] = found
