"""The position checks of positions.py on Sail (checkers/engines.py), the same definitions
in another shape.

Spark's JVM runs them best as one chain of windows sharing one sort and one exchange.
Sail's windows are slow over many small partitions (by offset: ~15 s for one at 10M writes)
and it computes a part of a plan shared by two branches twice; its aggregations and hash
joins are fast. So here the offset-level facts come from one aggregation by offset; the few
offsets read as two records get their "moved"/"vanished" facts from the reads at them
alone; the consumers' steps come from one window over the reads of readers other than the
drain (the drain's reads, most of a history, are in no step), and the steps forward over
more than one offset are poll-skips when a witness read an offset inside them
(skip_witness.py; a dense rank of every offset, a window over all of them, is not needed).
The reads are not shuffled by partition first: that exchange would keep the filters of each
branch from reaching the scan. What two branches read is written once (``engines.shared``).
A skip across a rebalance is then held to its group's reads by positions.group_cover, on
both engines.
tests/checkers/test_sail_engine.py holds both shapes to the same answers.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .engines import shared
from .identity import topic_name
from .positions import (
    READ_ORDER,
    UNDECODABLE,
    Rebalances,
    _crossed,
    _name,
    _producer,
    _seq,
    past_truncation,
    position_reads,
)
from .rows import anomaly_rows, flag_kinds
from .skip_witness import SPAN, witnessed


def position_anomalies_by_offset(reads: DataFrame, partitions: int, topics: list[str],
                                 readers: list[str], rebalances: Rebalances | None = None
                                 ) -> DataFrame:
    """positions.position_anomalies, by aggregation (see the module's docstring)."""
    r = position_reads(reads, partitions, topics, readers)
    drain_rec = F.when(~F.col("consumer"), F.col("rec"))
    offs = r.groupBy("tid", "partition", "offset").agg(
        F.min("rec").alias("lo"), F.max("rec").alias("hi"),
        F.min("read_ns").alias("first_ns"),
        F.min(drain_rec).alias("d_lo"), F.max(drain_rec).alias("d_hi"))
    key = ["tid", "partition", "offset"]
    # UNDECODABLE is the least key: lo is it exactly when some read there did not decode
    odd = shared(offs.where((F.col("lo") != F.col("hi")) | (F.col("lo") == UNDECODABLE)))
    two = shared(_two_records(r, odd.where(F.col("lo") != F.col("hi"))))
    at_offset = odd.join(two.select(*key, "reused"), key, "left")
    offset_rows = flag_kinds(at_offset, [
        (F.col("lo") != F.col("hi"),
         F.when(F.col("reused"), "reused-offset").otherwise("inconsistent-offset")),
        (F.col("lo") == UNDECODABLE, "unexpected"),
    ])
    # the consumers' steps: the previous read of every read by a reader but the drain, in
    # the order positions._by_windows takes them
    by_reader = Window.partitionBy("rid", "tid", "partition").orderBy(*READ_ORDER)
    steps = r.where(F.col("stepping")).select(
        "*",
        F.lag("offset").over(by_reader).alias("prev_offset"),
        F.lag("poll").over(by_reader).alias("prev_poll"),
        F.lag("rec").over(by_reader).alias("prev_rec"),
    )
    step = F.col("consumer") & F.col("prev_offset").isNotNull()
    wide = "wide-step"  # forward over more than one offset: a poll-skip if one existed between
    # a forward step from an offset read as two records: a skip past a truncation, maybe
    prev_two = odd.where(F.col("lo") != F.col("hi")).select(
        "tid", "partition", F.col("offset").alias("prev_offset"),
        F.col("d_lo").alias("prev_d_lo"), F.col("d_hi").alias("prev_d_hi"))
    stepped = shared(flag_kinds(
        steps.join(F.broadcast(prev_two), ["tid", "partition", "prev_offset"], "left"), [
            (step & (F.col("offset") <= F.col("prev_offset")), "nonmonotonic-poll"),
            (step & (F.col("offset") > F.col("prev_offset") + 1), wide),
            (step & F.col("prev_d_lo").isNotNull() & (F.col("offset") > F.col("prev_offset")),
             "maybe-past")]))
    skipped = witnessed(r, stepped.where(F.col("kind") == wide),
                        stepped.where(F.col("kind") == "nonmonotonic-poll"))
    step_key = ["rid", *key, "poll", "prev_offset"]
    cols = [c for c in stepped.columns if c != "kind"]
    # the candidates' ends as the drain read them: the few steps past a truncation
    past = (stepped.where(F.col("kind") == "maybe-past")
            .join(offs.select(*key, "d_lo", "d_hi"), key).where(past_truncation())
            .select(*cols, F.lit("poll-skip").alias("kind"), F.lit(True).alias("past")))
    widened = (stepped.where(F.col("kind").isin("nonmonotonic-poll", wide))
               .join(skipped, SPAN, "left")
               .where((F.col("kind") != wide) | F.col("skipped").isNotNull())
               .withColumn("kind", F.when(F.col("kind") == wide, "poll-skip")
                           .otherwise(F.col("kind")))
               .drop("skipped"))
    # one row per step: a wide skip that is also past a truncation is counted once
    widened = (widened.where(F.col("kind") != "poll-skip").unionByName(
        widened.where(F.col("kind") == "poll-skip").join(past.select(*step_key), step_key,
                                                          "left_anti"))
        .select(*cols, "kind", F.lit(False).alias("past")))
    poll_rows = (widened.unionByName(past)
                 .join(two.select(*key, F.col("reused").alias("reused_here")), key, "left"))
    kind = F.col("kind")
    # A reader's step back onto an offset a truncation reused: the client found the log
    # truncated and reset its position to the truncation point (KIP-320; librdkafka does it
    # silently). The truncation itself is reported, and judged, as reused-offset.
    reset = (kind == "nonmonotonic-poll") & F.coalesce(F.col("reused_here"), F.lit(False))
    across = (((F.col("subscribe")) | ((kind == "nonmonotonic-poll") & F.col("restart")))
              & _crossed(rebalances or {}, topics, readers))
    polls = anomaly_rows(
        poll_rows, kind,
        topic=topic_name(topics, F.col("tid")), partition=F.col("partition"),
        offset=F.col("offset"), read_offset=F.col("offset"),
        producer=_producer(F.col("rec")), seq=_seq(F.col("rec")),
        # a skip past a truncation: the record the reader read at prev_offset, gone from there
        other_producer=_producer(F.when(F.col("past"), F.col("prev_rec"))),
        other_seq=_seq(F.when(F.col("past"), F.col("prev_rec"))),
        reader=_name(readers, F.col("rid")), poll=F.col("poll"),
        prev_offset=F.col("prev_offset"), prev_poll=F.col("prev_poll"),
        event_ns=F.col("read_ns"),
        excused=across | reset,
        excuse=F.when(across, "rebalance").when(reset, "truncation"),
    )
    reuse = kind == "reused-offset"
    incons = kind == "inconsistent-offset"
    # reused-offset: the record the log holds now, and one the live readers saw before
    old = F.when(F.col("lo") == F.col("d_lo"), F.col("hi")).otherwise(F.col("lo"))
    rec = F.when(incons, F.col("lo")).when(reuse, F.col("d_lo"))
    other = F.when(incons, F.col("hi")).when(reuse, old)
    at = anomaly_rows(
        offset_rows, kind,
        topic=topic_name(topics, F.col("tid")), partition=F.col("partition"),
        offset=F.col("offset"), read_offset=F.col("offset"),
        producer=_producer(rec), seq=_seq(rec),
        other_producer=_producer(other), other_seq=_seq(other),
        event_ns=F.col("first_ns"),
    )
    return at.unionByName(polls)


def _two_records(r: DataFrame, two: DataFrame) -> DataFrame:
    """The offsets read as two records (``two``: key, lo, hi, d_lo, d_hi), with ``reused``.

    ``moved``: a record read there other than the drain's is still in the log at another
    offset of the partition (the drain read it there). ``vanished``: the drain read exactly
    one decodable record there and every other record read there is in the log nowhere
    (the truncated tail's record). An offset is reused when the drain read one decodable
    record there and either its other records vanished or the partition shows a vanished
    record at or below it (the proof that the log was truncated) whose replacement was
    first read after the old record here was (the truncation came between them)."""
    key = ["tid", "partition", "offset"]
    one_drained = (F.col("d_lo").isNotNull() & (F.col("d_lo") == F.col("d_hi"))
                   & (F.col("lo") != UNDECODABLE))
    there = shared(r.select(*key, "rec", "read_ns")
                   .join(F.broadcast(two.select(*key, "d_lo")), key))
    drained = (r.where(~F.col("consumer")).select("tid", "partition", "rec")
               .join(F.broadcast(there.select("tid", "partition", "rec").distinct()),
                     ["tid", "partition", "rec"], "left_semi")
               .distinct().select("tid", "partition", "rec", F.lit(1).alias("drained")))
    moved = there.join(drained, ["tid", "partition", "rec"], "left").groupBy(*key).agg(
        F.max(((F.col("rec") != F.col("d_lo")) & (F.col("drained") == 1)).cast("int"))
        .alias("moved"),
        F.min(F.when(F.col("rec") != F.col("d_lo"), F.col("read_ns"))).alias("old_ns"),
        F.min(F.when(F.col("rec") == F.col("d_lo"), F.col("read_ns"))).alias("new_ns"))
    flags = shared(two.join(moved, key, "left").select(
        "*", one_drained.alias("one_drained"),
        (one_drained & (F.coalesce(F.col("moved"), F.lit(0)) == 0)).alias("vanished")))
    # the latest first read of a vanished offset's replacement at or below each offset (the
    # offsets read as two records are few: a join within the partition)
    van = flags.where(F.col("vanished")).select(
        "tid", "partition", F.col("offset").alias("v_off"), F.col("new_ns").alias("v_ns"))
    trunc = (flags.select(*key).join(van, ["tid", "partition"])
             .where(F.col("v_off") <= F.col("offset"))
             .groupBy(*key).agg(F.max("v_ns").alias("trunc_ns")))
    return flags.join(trunc, key, "left").select(
        *key, (F.col("one_drained") & (F.col("vanished")
                                       | F.coalesce(F.col("old_ns") <= F.col("trunc_ns"),
                                                    F.lit(False))))
        .alias("reused"))


