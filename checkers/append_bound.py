"""An upper bound on when the log appended an offset: the earliest acknowledgement of any
write at that offset or above in the partition (a write is appended before it is
acknowledged, and the log appends in offset order).

librdkafka#4953's tag needs it: a producer's epoch bump can explain a copy only if it came
before the copy's append, and the copy's first read can be long after (the drain).

The acknowledgements are many and the offsets asked about few, so the bound is found in
buckets of offsets: the earliest acknowledgement of each bucket (one hash aggregation, a
small table), the buckets above the asked offset's, and the acknowledgements inside its own
bucket at or above it (an equi-join on the bucket, the asked rows broadcast).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

#: Offsets per bucket: the rows of one bucket are what an asked offset is compared with.
BUCKET = 4096


def acknowledged(writes: DataFrame, tid: Column) -> DataFrame:
    """(tid, partition, offset, complete_ns) of every write acknowledged with an offset."""
    return writes.where((F.col("outcome") == "ok") & F.col("offset").isNotNull()
                        & F.col("complete_ns").isNotNull()).select(
        tid.alias("tid"), "partition", "offset", "complete_ns")


def with_append_bound(rows: DataFrame, acks: DataFrame, offset: Column,
                      out: str = "append_bound_ns") -> DataFrame:
    """``rows`` (with ``tid`` and ``partition``) plus ``out``: the earliest acknowledgement
    (ns) of a write at ``offset`` or above in the row's partition; null where none is
    known (or ``offset`` is null)."""
    q = rows.select("*", offset.alias("_q_off"))
    asked = q.where(F.col("_q_off").isNotNull()).select("tid", "partition", "_q_off").distinct()
    asked = asked.withColumn("_bk", F.floor(F.col("_q_off") / BUCKET))
    bucketed = acks.select("tid", "partition", F.floor(F.col("offset") / BUCKET).alias("_bk"),
                           "offset", "complete_ns")
    coarse = bucketed.groupBy("tid", "partition", "_bk").agg(
        F.min("complete_ns").alias("_m"))
    above = (asked.alias("a").join(
        coarse.alias("c"),
        (F.col("a.tid") == F.col("c.tid")) & (F.col("a.partition") == F.col("c.partition"))
        & (F.col("c._bk") > F.col("a._bk")))
        .groupBy(F.col("a.tid").alias("tid"), F.col("a.partition").alias("partition"),
                 F.col("a._q_off").alias("_q_off"))
        .agg(F.min("c._m").alias("_above")))
    inside = (bucketed.join(F.broadcast(asked), ["tid", "partition", "_bk"])
              .where(F.col("offset") >= F.col("_q_off"))
              .groupBy("tid", "partition", "_q_off")
              .agg(F.min("complete_ns").alias("_inside")))
    bounds = (asked.select("tid", "partition", "_q_off")
              .join(above, ["tid", "partition", "_q_off"], "left")
              .join(inside, ["tid", "partition", "_q_off"], "left")
              .select("tid", "partition", "_q_off",
                      F.least(F.col("_above"), F.col("_inside")).alias(out)))
    return (q.join(F.broadcast(bounds), ["tid", "partition", "_q_off"], "left")
            .drop("_q_off"))
