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

from .identity import topic_id, topic_name
from .rows import anomaly_rows

DRAIN = "drain"


#: The record key of an undecodable value (smaller than every decoded key).
UNDECODABLE = -(1 << 63)
_SEQ_BITS = 40


def _record_key() -> F.Column:
    """What a reader saw at an offset, as one long: producer << 40 | seq, or UNDECODABLE.

    Fixed-width keys keep the two sorts of the reads cheap (seq values are far below 2^40).
    """
    valid = F.coalesce(F.col("valid"), F.lit(False)) & F.col("producer").isNotNull() & F.col(
        "seq"
    ).isNotNull()
    packed = F.shiftleft(F.col("producer").cast("long"), _SEQ_BITS) + F.col("seq")
    return F.when(valid, packed).otherwise(F.lit(UNDECODABLE))


def _producer(key: F.Column) -> F.Column:
    return F.when(key != UNDECODABLE, F.shiftright(key, _SEQ_BITS).cast("int"))


def _seq(key: F.Column) -> F.Column:
    return F.when(key != UNDECODABLE, key.bitwiseAND(F.lit((1 << _SEQ_BITS) - 1)))


def position_anomalies(reads: DataFrame, partitions: int, topics: list[str],
                       readers: list[str]) -> DataFrame:
    """Anomaly rows of inconsistent-offset, unexpected (undecodable) and the poll checks.

    One chain without branches (a branch would repeat the exchange): windows by offset
    (sharing one sort), then the per-reader window, then one projection that lists each
    row's kinds. Topics and readers travel as ints so that sorted rows are fixed-width.
    """
    consumer = (F.col("reader") != DRAIN) & (F.coalesce(F.col("mode"), F.lit("")) != DRAIN)
    r = reads.select(
        _id(readers, F.col("reader")).alias("rid"),
        consumer.alias("consumer"),
        (F.col("mode") == "subscribe").alias("subscribe"),
        "poll", "read_ns", topic_id(topics, F.col("topic")).alias("tid"), "partition",
        "offset", _record_key().alias("rec"),
    ).repartition(partitions, "tid", "partition")
    by_offset = Window.partitionBy("tid", "partition").orderBy("offset")
    at_offset = Window.partitionBy("tid", "partition", "offset")
    r2 = r.select(
        "*",
        F.dense_rank().over(by_offset).alias("rank"),
        F.lag("offset").over(by_offset).alias("offset_before"),
        F.min("rec").over(at_offset).alias("lo"),
        F.max("rec").over(at_offset).alias("hi"),
        F.min("read_ns").over(at_offset).alias("first_ns"),
    )
    by_reader = Window.partitionBy("rid", "tid", "partition").orderBy(
        "poll", "read_ns", "offset"
    )
    r3 = r2.select(
        "*",
        F.lag("offset").over(by_reader).alias("prev_offset"),
        F.lag("rank").over(by_reader).alias("prev_rank"),
    )
    first_here = F.col("offset_before").isNull() | (F.col("offset_before") != F.col("offset"))
    step = F.col("consumer") & F.col("prev_offset").isNotNull()
    kinds = F.array_compact(F.array(
        F.when(first_here & (F.col("lo") != F.col("hi")), "inconsistent-offset"),
        F.when(first_here & (F.col("lo") == UNDECODABLE), "unexpected"),
        F.when(step & (F.col("offset") <= F.col("prev_offset")), "nonmonotonic-poll"),
        F.when(step & (F.col("offset") > F.col("prev_offset"))
               & (F.col("rank") - F.col("prev_rank") > 1), "poll-skip"),
    ))
    flagged = r3.select("*", F.explode(kinds).alias("kind"))
    kind = F.col("kind")
    poll_kind = kind.isin("nonmonotonic-poll", "poll-skip")
    incons = kind == "inconsistent-offset"
    key = F.when(poll_kind, F.col("rec")).when(incons, F.col("lo"))
    return anomaly_rows(
        flagged, kind,
        topic=topic_name(topics, F.col("tid")), partition=F.col("partition"),
        offset=F.col("offset"), read_offset=F.col("offset"),
        producer=_producer(key), seq=_seq(key),
        other_producer=F.when(incons, _producer(F.col("hi"))),
        other_seq=F.when(incons, _seq(F.col("hi"))),
        reader=F.when(poll_kind, _name(readers, F.col("rid"))),
        poll=F.when(poll_kind, F.col("poll")),
        prev_offset=F.when(poll_kind, F.col("prev_offset")),
        event_ns=F.when(poll_kind, F.col("read_ns")).otherwise(F.col("first_ns")),
        excused=poll_kind & F.col("subscribe"),
    )


def _id(names: list[str], col: F.Column) -> F.Column:
    return topic_id(names, col)


def _name(names: list[str], col: F.Column) -> F.Column:
    return topic_name(names, col)
