"""Position-based checks: one shuffle of the reads by (topic, partition); the aggregation by
offset and both windows reuse that partitioning.

- inconsistent-offset: an offset read with two different records;
- unexpected: an offset read with a value that does not decode;
- poll-skip / nonmonotonic-poll: a consumer's consecutive reads of a partition. An offset
  *exists* when any reader (the drain included) read it; ranking the existing offsets densely
  turns "jumped over an existing offset" into "rank grew by more than one", so gaps nobody
  read (transaction markers, lost records, compaction) are not skips.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .rows import anomaly_rows

DRAIN = "drain"


def _record_key() -> F.Column:
    """What a reader saw at an offset: the decoded identity, or 'undecodable'."""
    valid = F.coalesce(F.col("valid"), F.lit(False)) & F.col("producer").isNotNull() & F.col(
        "seq"
    ).isNotNull()
    return F.struct(
        valid.alias("valid"),
        F.when(valid, F.col("producer")).alias("producer"),
        F.when(valid, F.col("seq")).alias("seq"),
    )


def position_anomalies(reads: DataFrame, partitions: int) -> DataFrame:
    """Anomaly rows of inconsistent-offset, unexpected (undecodable) and the poll checks."""
    r = reads.select(
        "reader", "mode", "poll", "read_ns", "topic", "partition", "offset",
        _record_key().alias("rec"),
    ).repartition(partitions, "topic", "partition")

    per_offset = r.groupBy("topic", "partition", "offset").agg(
        F.min("rec").alias("lo"),
        F.max("rec").alias("hi"),
        F.max(F.when(~F.col("rec.valid"), 1).otherwise(0)).alias("bad"),
        F.min("read_ns").alias("read_ns"),
    )
    kinds = F.array_compact(F.array(
        F.when(F.col("lo") != F.col("hi"), "inconsistent-offset"),
        F.when(F.col("bad") == 1, "unexpected"),
    ))
    per_kind = per_offset.select("*", F.explode(kinds).alias("kind"))
    offsets = anomaly_rows(
        per_kind, F.col("kind"),
        topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
        read_offset=F.col("offset"),
        producer=F.when(F.col("kind") == "inconsistent-offset", F.col("lo.producer")),
        seq=F.when(F.col("kind") == "inconsistent-offset", F.col("lo.seq")),
        other_producer=F.col("hi.producer"), other_seq=F.col("hi.seq"),
        event_ns=F.col("read_ns"),
    )

    ranked = r.withColumn(
        "rank", F.dense_rank().over(Window.partitionBy("topic", "partition").orderBy("offset"))
    ).where((F.col("reader") != DRAIN) & (F.coalesce(F.col("mode"), F.lit("")) != DRAIN))
    order = Window.partitionBy("reader", "topic", "partition").orderBy(
        "poll", "read_ns", "offset"
    )
    steps = (
        ranked.withColumn("prev_offset", F.lag("offset").over(order))
        .withColumn("prev_rank", F.lag("rank").over(order))
        .withColumn("prev_poll", F.lag("poll").over(order))
        .where(F.col("prev_offset").isNotNull())
    )
    cols = dict(
        reader=F.col("reader"), poll=F.col("poll"), topic=F.col("topic"),
        partition=F.col("partition"), offset=F.col("offset"), read_offset=F.col("offset"),
        prev_offset=F.col("prev_offset"), producer=F.col("rec.producer"), seq=F.col("rec.seq"),
        event_ns=F.col("read_ns"), excused=F.col("mode") == "subscribe",
    )
    kind = (
        F.when(F.col("offset") <= F.col("prev_offset"), "nonmonotonic-poll")
        .when(F.col("rank") - F.col("prev_rank") > 1, "poll-skip")
    )
    polls = anomaly_rows(steps.where(kind.isNotNull()), kind, **cols)
    return offsets.unionByName(polls)
