"""The pipeline check: did a consume-transform-produce application turn every input record
into exactly one output record (or at least one), and none from input that was never
committed?

run.json names the pipeline (``"pipeline": {"input": "orders", "output": "invoices",
"delivery": "exactly-once"}``, written by ``ChaosSession.check_pipeline``). The application's
recorded producer stamps each output with its source's identity (the ``kc-src`` header, read
into ``reads.src_producer`` / ``src_seq``); the final drain reads both topics. Then, over the
drain's reads only (what the logs hold, read_committed where the drain was):

- ``missing``: an input record the drain read with no output derived from it;
- ``duplicated``: an input record with more than one distinct output record (each output
  is an identity of its own; Kafka storing one output twice is the main checker's
  ``duplicate``, not this);
- ``orphaned``: an output whose source the drain never read in the input topic (made from
  aborted or never-written input);
- ``unsourced``: output records without a source header (the verdict cannot place them).

Exactly-once forbids all three; at-least-once allows ``duplicated``. A drain that did not
read both topics completely, or unsourced output, makes the pipeline verdict unknown (and
missing outputs of an unfinished output topic, or orphans of an unfinished input topic,
prove nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.anomalies import MAX_EXAMPLES
from contract.schemas import DRAIN_READER

from .combine import UNKNOWN, CheckResult, Validity
from .context import CheckContext
from .engines import keep, release

DELIVERIES = ("exactly-once", "at-least-once")


@dataclass(frozen=True)
class Pipeline:
    """The pipeline run.json names: input and output topic, the delivery it promises."""

    input: str
    output: str
    delivery: str = "exactly-once"

    @classmethod
    def from_run(cls, run_cfg: dict[str, Any]) -> Pipeline | None:
        spec = run_cfg.get("pipeline")
        if not isinstance(spec, dict):
            return None
        delivery = str(spec.get("delivery", "exactly-once"))
        if delivery not in DELIVERIES:
            raise ValueError(f"pipeline delivery {delivery!r}: one of {', '.join(DELIVERIES)}")
        return cls(str(spec["input"]), str(spec["output"]), delivery)


def _rows(df: DataFrame, order: list[str]) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.orderBy(*order).limit(MAX_EXAMPLES).collect()]


def check_pipeline(reads: DataFrame, p: Pipeline, complete: list[str],
                   partitions: list[str]) -> tuple[dict[str, Any], Validity, list[str]]:
    """(results.json ``pipeline`` entry, its validity, unknown reasons) for ``reads``.

    ``complete``: the "topic:partition" keys the drain read to their end; ``partitions``:
    every key the drain was to read."""
    drained = reads.where(F.col("reader") == DRAIN_READER)
    inputs = (drained.where((F.col("topic") == p.input) & F.col("valid")
                            & F.col("producer").isNotNull() & F.col("seq").isNotNull())
              .groupBy("producer", "seq").agg(F.min("offset").alias("in_offset"),
                                              F.first("partition").alias("in_partition")))
    out = drained.where(F.col("topic") == p.output)
    sourced = out.where(F.col("src_producer").isNotNull() & F.col("src_seq").isNotNull())
    per_src = sourced.groupBy("src_producer", "src_seq").agg(
        F.count_distinct("producer", "seq").alias("outputs"),
        F.sort_array(F.collect_set(F.struct("partition", "offset", "producer", "seq")))
        .alias("output_records"))
    key = ((F.col("i.producer") == F.col("s.src_producer"))
           & (F.col("i.seq") == F.col("s.src_seq")))
    joined = inputs.alias("i").join(per_src.alias("s"), key, "full_outer")
    flagged = keep(joined.select(
        F.coalesce("i.producer", "s.src_producer").alias("producer"),
        F.coalesce("i.seq", "s.src_seq").alias("seq"),
        F.col("i.in_partition").alias("input_partition"),
        F.col("i.in_offset").alias("input_offset"),
        F.coalesce(F.col("s.outputs"), F.lit(0)).alias("outputs"),
        F.col("s.output_records").alias("output_records"),
        F.col("i.producer").isNotNull().alias("is_input"),
    ))
    try:
        c = flagged.agg(
            F.sum(F.col("is_input").cast("int")).alias("inputs"),
            F.sum(F.when(F.col("is_input") & (F.col("outputs") == 0), 1).otherwise(0))
            .alias("missing"),
            F.sum(F.when(F.col("is_input") & (F.col("outputs") > 1), 1).otherwise(0))
            .alias("duplicated"),
            F.sum(F.when(~F.col("is_input"), 1).otherwise(0)).alias("orphaned"),
        ).collect()[0]
        counts = {k: int(c[k] or 0) for k in ("inputs", "missing", "duplicated", "orphaned")}
        order = ["producer", "seq"]
        examples = {
            "missing": _rows(flagged.where(F.col("is_input") & (F.col("outputs") == 0)), order)
            if counts["missing"] else [],
            "duplicated": _rows(flagged.where(F.col("is_input") & (F.col("outputs") > 1)),
                                order) if counts["duplicated"] else [],
            "orphaned": _rows(flagged.where(~F.col("is_input")), order)
            if counts["orphaned"] else [],
        }
    finally:
        release(flagged)
    totals = out.agg(F.count(F.lit(1)).alias("n"),
                     F.sum(F.when(F.col("src_producer").isNull(), 1).otherwise(0))
                     .alias("unsourced")).collect()[0]
    counts["outputs"] = int(totals["n"] or 0)
    counts["unsourced"] = int(totals["unsourced"] or 0)
    forbidden = ["missing", "orphaned"] + (["duplicated"] if p.delivery == "exactly-once"
                                           else [])
    unknown: list[str] = []
    wanted = [k for k in partitions if k.split(":", 1)[0] in (p.input, p.output)]
    incomplete = sorted(set(wanted) - set(complete))
    if incomplete:
        unknown.append(f"the drain did not read the pipeline's partitions {incomplete[:8]} "
                       "to their end: missing outputs cannot be told from unread ones")
    if not any(k.startswith(p.output + ":") for k in wanted):
        unknown.append(f"the drain did not read the output topic {p.output!r}")
    if counts["unsourced"]:
        unknown.append(f"{counts['unsourced']} output record(s) carry no kc-src header: "
                       "the pipeline check cannot say what they were made from")
    if counts["inputs"] == 0:
        unknown.append(f"the drain read no input record in {p.input!r}: nothing to check")
    # What the drain did not read to the end cannot prove a violation: outputs missing from
    # an unfinished output topic may be unread, sources of orphans may be unread input.
    unproven = set()
    if any(k.startswith(p.output + ":") for k in incomplete):
        unproven.add("missing")
    if any(k.startswith(p.input + ":") for k in incomplete):
        unproven.add("orphaned")
    violated = [k for k in forbidden if counts[k] and k not in unproven]
    valid: Validity = False if violated else (UNKNOWN if unknown else True)
    entry = {"input": p.input, "output": p.output, "delivery": p.delivery, "valid": valid,
             "counts": counts, "forbidden": forbidden, "violated": violated,
             "examples": examples}
    return entry, valid, unknown


@dataclass
class PipelineCheck:
    """The pipeline check, when run.json names a pipeline."""

    name: str = "pipeline"

    def run(self, ctx: CheckContext) -> CheckResult:
        p = Pipeline.from_run(ctx.run_cfg)
        if p is None:
            return CheckResult()
        keys = sorted(set(ctx.drain.complete) | set(ctx.drain.incomplete))
        entry, valid, unknown = check_pipeline(ctx.reads, p, ctx.drain.complete, keys)
        reasons = [f"pipeline: {r}" for r in unknown]
        violations = [f"pipeline ({p.delivery}): {entry['counts'][k]} {k}"
                      for k in entry["violated"]]
        return CheckResult(unknown=reasons, violations=violations,
                           extra={"pipeline": entry})
