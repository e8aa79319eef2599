"""The producer id, epoch and base sequence of the log batches that hold a duplicate's copies
or a reorder's two records, from the replicas' segments (``logs/data``).

librdkafka#4953 resends a batch under a *bumped epoch* (the broker cannot deduplicate across
epochs), so two copies in batches of the same producer id and epoch are no resend of that
bug: with the same base sequence too, the broker appended one batch twice (a deduplication
failure); a reorder of two batches of one producer id and epoch got past the broker's
sequence check. Both are named as the broker's findings, never as the client bug.

Where no segments were collected (or the run directory is behind a URI) there is no such
evidence, and the records keep the tag the timing gives them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .divergence import _SEGMENT, LOG_DATA, _local_layout
from .runfiles import RunDir
from .segments import BATCH_HEADER, HEADER_SIZE, iter_batches

#: Finding names (results.json ``anomalies.<kind>.findings``).
DEDUP_FAILURE = "broker-deduplication-failure"
SEQUENCE_FAILURE = "broker-sequence-failure"

#: Batches beyond which the table is not built (no evidence: the safe side for the tag is
#: to keep it, for the finding not to name one).
MAX_BATCHES = 2_000_000

_SCHEMA = ("topic string, partition int, base long, last long, pid long, pepoch int, "
           "bseq int")


@dataclass(frozen=True)
class BatchIds:
    topic: str
    partition: int
    base: int
    last: int
    pid: int
    pepoch: int
    bseq: int


def _replica_batches(files: list[str]) -> list[BatchIds]:
    out: list[BatchIds] = []
    for f in sorted(files, key=lambda p: int(_SEGMENT.match(os.path.basename(p)).group(1))):  # type: ignore[union-attr]
        with open(f, "rb") as fh:
            data = fh.read()
        for b in iter_batches(data):
            if b.magic != 2 or b.is_control or len(b.data) < HEADER_SIZE:
                continue
            (*_, pid, pepoch, bseq, _count) = BATCH_HEADER.unpack_from(b.data, 0)
            out.append(BatchIds("", 0, b.base_offset, b.last_offset, pid, pepoch, bseq))
    return out


def batch_table(spark: SparkSession, run: RunDir, topics: list[str]) -> DataFrame | None:
    """Per partition of ``topics``, the data batches of the replica holding the longest log
    (after catch-up every replica holds the same batches below its end; divergence checks
    that); None without local segments."""
    root = run.local_path(LOG_DATA)
    if root is None or not os.path.isdir(root):
        return None
    rows: list[tuple[str, int, int, int, int, int, int]] = []
    for (topic, part), reps in sorted(_local_layout(root).items()):
        if topic not in topics:
            continue
        longest = max((_replica_batches(files) for files in reps.values()),
                      key=lambda bs: bs[-1].last if bs else -1, default=[])
        rows.extend((topic, part, b.base, b.last, b.pid, b.pepoch, b.bseq) for b in longest)
        if len(rows) > MAX_BATCHES:
            return None
    return spark.createDataFrame(rows, _SCHEMA) if rows else None


def _ids_at(rows: DataFrame, batches: DataFrame, offset: str, prefix: str) -> DataFrame:
    b = batches.select(*[(F.col(c) if c in ("topic", "partition") else F.col(c).cast("long"))
                         .alias(f"{prefix}{c}") for c in batches.columns])
    cond = ((F.col("topic") == F.col(f"{prefix}topic"))
            & (F.col("partition") == F.col(f"{prefix}partition"))
            & (F.col(offset) >= F.col(f"{prefix}base")) & (F.col(offset) <= F.col(f"{prefix}last")))
    return rows.join(F.broadcast(b), cond, "left").drop(
        f"{prefix}topic", f"{prefix}partition", f"{prefix}base", f"{prefix}last")


#: Anomaly kinds whose two offsets the batches are looked up for: (first, second).
PAIRS = {"duplicate": ("read_offset", "copy_offset"), "reorder": ("prev_offset", "read_offset")}


def with_batch_ids(union: DataFrame, batches: DataFrame | None) -> DataFrame:
    """``union`` (anomaly rows) plus ``lo_pid, lo_pepoch, lo_bseq`` / ``hi_*``: the batch ids
    at the two offsets of duplicate and reorder rows (null elsewhere or unknown)."""
    cols = ["lo_pid", "lo_pepoch", "lo_bseq", "hi_pid", "hi_pepoch", "hi_bseq"]
    if batches is None:
        return union.withColumns({c: F.lit(None).cast("long") for c in cols})
    pair = F.col("kind").isin(*PAIRS)
    asked = union.where(pair).withColumns({
        "_o1": F.when(F.col("kind") == "duplicate", F.col("read_offset"))
        .otherwise(F.col("prev_offset")),
        "_o2": F.when(F.col("kind") == "duplicate", F.col("copy_offset"))
        .otherwise(F.col("read_offset"))})
    asked = _ids_at(_ids_at(asked, batches, "_o1", "lo_"), batches, "_o2", "hi_").drop(
        "_o1", "_o2")
    rest = union.where(~pair).withColumns(
        {c: F.lit(None).cast("long") for c in cols})
    return reduce(DataFrame.unionByName, [asked.select(*rest.columns), rest])


def same_ids() -> Column:
    """Both batches known, of one producer id and epoch."""
    return (F.col("lo_pid").isNotNull() & F.col("hi_pid").isNotNull()
            & (F.col("lo_pid") == F.col("hi_pid")) & (F.col("lo_pepoch") == F.col("hi_pepoch")))


def finding() -> Column:
    """The broker's finding a row shows, else null."""
    kind = F.col("kind")
    return (F.when((kind == "duplicate") & same_ids() & (F.col("lo_bseq") == F.col("hi_bseq")),
                   F.lit(DEDUP_FAILURE))
            .when((kind == "reorder") & same_ids(), F.lit(SEQUENCE_FAILURE)))
