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
    """Anomaly rows of inconsistent-offset, unexpected (undecodable) and the poll checks.

    One chain without branches (a branch would repeat the exchange): windows by offset
    (sharing one sort), then the per-reader window, then one projection that lists each
    row's kinds.
    """
    r = reads.select(
        "reader", "mode", "poll", "read_ns", "topic", "partition", "offset",
        _record_key().alias("rec"),
    ).repartition(partitions, "topic", "partition")
    by_offset = Window.partitionBy("topic", "partition").orderBy("offset")
    at_offset = Window.partitionBy("topic", "partition", "offset")
    r2 = r.select(
        "*",
        F.dense_rank().over(by_offset).alias("rank"),
        F.lag("offset").over(by_offset).alias("offset_before"),
        F.min("rec").over(at_offset).alias("lo"),
        F.max("rec").over(at_offset).alias("hi"),
        F.min("read_ns").over(at_offset).alias("first_ns"),
    )
    by_reader = Window.partitionBy("reader", "topic", "partition").orderBy(
        "poll", "read_ns", "offset"
    )
    r3 = r2.select(
        "*",
        F.lag("offset").over(by_reader).alias("prev_offset"),
        F.lag("rank").over(by_reader).alias("prev_rank"),
    )
    first_here = F.col("offset_before").isNull() | (F.col("offset_before") != F.col("offset"))
    consumer = (F.col("reader") != DRAIN) & (F.coalesce(F.col("mode"), F.lit("")) != DRAIN)
    step = consumer & F.col("prev_offset").isNotNull()
    kinds = F.array_compact(F.array(
        F.when(first_here & (F.col("lo") != F.col("hi")), "inconsistent-offset"),
        F.when(first_here & ~F.col("lo.valid"), "unexpected"),
        F.when(step & (F.col("offset") <= F.col("prev_offset")), "nonmonotonic-poll"),
        F.when(step & (F.col("offset") > F.col("prev_offset"))
               & (F.col("rank") - F.col("prev_rank") > 1), "poll-skip"),
    ))
    flagged = r3.select("*", F.explode(kinds).alias("kind"))
    kind = F.col("kind")
    poll_kind = kind.isin("nonmonotonic-poll", "poll-skip")
    return anomaly_rows(
        flagged, kind,
        topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
        read_offset=F.col("offset"),
        producer=F.when(poll_kind, F.col("rec.producer"))
        .when(kind == "inconsistent-offset", F.col("lo.producer")),
        seq=F.when(poll_kind, F.col("rec.seq"))
        .when(kind == "inconsistent-offset", F.col("lo.seq")),
        other_producer=F.when(kind == "inconsistent-offset", F.col("hi.producer")),
        other_seq=F.when(kind == "inconsistent-offset", F.col("hi.seq")),
        reader=F.when(poll_kind, F.col("reader")), poll=F.when(poll_kind, F.col("poll")),
        prev_offset=F.when(poll_kind, F.col("prev_offset")),
        event_ns=F.when(poll_kind, F.col("read_ns")).otherwise(F.col("first_ns")),
        excused=poll_kind & (F.col("mode") == "subscribe"),
    )
