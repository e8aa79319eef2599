"""Which offsets a consumer's step forward skipped: only those shown in the step's own log.

A step of reader A from record P at offset a to record C at offset b (a + 1 < b) skipped an
offset o between them when a record lay at o *in the log A read C at b in*. A log is
replaced from a truncation point up (an unclean election, every replica losing power), and
records at one offset in two logs prove nothing about each other: a marker (a control
record no client returns) at o in the old log and another producer's record at o in the new
one. So an offset o counts only when a *witness* read a record at o in that log: a reader X
that read C at b and

- is the drain, which reads the final log after every fault healed: a log holding C at b
  holds the same records below b (a truncation replaces a suffix; a follower truncates to
  its leader's epoch boundary before it fetches, KIP-101), or
- read o before its last read of C at b (its order: poll, read_ns, offset): a consumer
  reset to a truncation point reads the new log's o after the old log's C, and then proves
  nothing about the old log.

Without a witness the step says nothing about o (not a skip: unknown, not counted). The
drain reads every record of the final log, so a step whose end the final log holds is judged
as before; only steps in a replaced history (or where the drain missed an offset) are held
to a consumer's testimony. positions.py, positions_by_offset.py and
tests/checkers/checker_reference.py apply the same rule.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: The columns that name a wide step for the witness test: its partition, its two offsets
#: and the record at its far end.
SPAN = ["tid", "partition", "prev_offset", "offset", "rec"]


def witnessed(r: DataFrame, wide: DataFrame) -> DataFrame:
    """The wide steps of ``wide`` (columns :data:`SPAN`, from positions.position_reads'
    reads ``r``) that skipped a witnessed offset (above), as :data:`SPAN` plus
    ``skipped`` = true.

    The steps are few (only forward steps over more than one offset): the offsets inside
    them and their far ends are broadcast and joined with the reads."""
    spans = wide.select(*SPAN).distinct()
    ends = (r.join(F.broadcast(spans.select("tid", "partition", "offset", "rec").distinct()),
                   ["tid", "partition", "offset", "rec"])
            .select("tid", "partition", F.col("offset").alias("to"), "rec", "rid",
                    "consumer", F.col("poll").alias("y_poll"),
                    F.col("read_ns").alias("y_ns")))
    inside = spans.select("tid", "partition", "prev_offset", F.col("offset").alias("to"),
                          "rec", F.explode(F.sequence(F.col("prev_offset") + 1,
                                                      F.col("offset") - 1)).alias("at"))
    there = (r.select("tid", "partition", F.col("offset").alias("at"), "rid",
                      F.col("poll").alias("x_poll"), F.col("read_ns").alias("x_ns"))
             .join(F.broadcast(inside), ["tid", "partition", "at"]))
    # at o before the read of C at b (a tie in poll and read_ns: o < b comes first)
    before = ((F.col("x_poll") < F.col("y_poll"))
              | ((F.col("x_poll") == F.col("y_poll")) & (F.col("x_ns") <= F.col("y_ns"))))
    return (there.join(ends, ["tid", "partition", "to", "rec", "rid"])
            .where(~F.col("consumer") | before)
            .select("tid", "partition", "prev_offset", F.col("to").alias("offset"), "rec")
            .distinct().withColumn("skipped", F.lit(True)))


def troubled(r: DataFrame) -> DataFrame:
    """(tid, partition) of the partitions where the rank test of positions._by_windows
    ("some reader read an offset between") can differ from :func:`witnessed`: an offset
    some reader read that the drain did not, or read as more than one record. Elsewhere
    every record read is the drain's, so the drain witnesses every offset anyone read."""
    drain_rec = F.when(~F.col("consumer"), F.col("rec"))
    offs = r.groupBy("tid", "partition", "offset").agg(
        F.min("rec").alias("lo"), F.max("rec").alias("hi"),
        F.min(drain_rec).alias("d_lo"))
    return (offs.where(F.col("d_lo").isNull() | (F.col("lo") != F.col("hi")))
            .select("tid", "partition").distinct())
