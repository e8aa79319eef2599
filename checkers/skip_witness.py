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
- is a consumer that read o and then C at b without a step back between the two reads (its
  order: poll, place in the poll, read_ns, offset): it read both in one pass over one log.
  A consumer reset to a truncation point (KIP-320) steps back, so what it read before the
  reset (the old log) testifies nothing about a step after it, nor what it read after (the
  new log) about a step before it. (In lost-txn-marker-continued's run both happened: the
  reader's steps over the old log's markers, and its steps over the new log's unread
  transactions, where it had read the old log's records before its reset.)

Without a witness the step says nothing about o (not a skip: unknown, not counted). The
drain reads every record of the final log, so a step whose end the final log holds is judged
as before; only steps in a replaced history (or where the drain missed an offset) are held
to a consumer's testimony. Left open: a client without KIP-320 that reads on past a
truncation without stepping back joins two logs in one pass (its own step is then a
poll-skip, positions.past_truncation, but its testimony for others' steps is taken).
positions.py, positions_by_offset.py and tests/checkers/checker_reference.py apply the same
rule.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

#: The columns that name a wide step for the witness test: its partition, its two offsets
#: and the record at its far end.
SPAN = ["tid", "partition", "prev_offset", "offset", "rec"]


def witnessed(r: DataFrame, wide: DataFrame, backs: DataFrame) -> DataFrame:
    """The wide steps of ``wide`` (columns :data:`SPAN`, from positions.position_reads'
    reads ``r``) that skipped a witnessed offset (above), as :data:`SPAN` plus
    ``skipped`` = true. ``backs``: the consumers' steps back (rid, tid, partition and the
    later read's poll, ix, read_ns, offset), at least those of the partitions in ``wide``.

    The steps are few (only forward steps over more than one offset), and so are the steps
    back: the offsets inside the steps and their far ends are broadcast and joined with the
    reads, and the pairs of reads a step back separates are left out by a broadcast join."""
    spans = wide.select(*SPAN).distinct()
    ends = (r.join(F.broadcast(spans.select("tid", "partition", "offset", "rec").distinct()),
                   ["tid", "partition", "offset", "rec"])
            .select("tid", "partition", F.col("offset").alias("to"), "rec", "rid",
                    "consumer", F.col("poll").alias("y_poll"), F.col("ix").alias("y_ix"),
                    F.col("read_ns").alias("y_ns")))
    inside = spans.select("tid", "partition", "prev_offset", F.col("offset").alias("to"),
                          "rec", F.explode(F.sequence(F.col("prev_offset") + 1,
                                                      F.col("offset") - 1)).alias("at"))
    there = (r.select("tid", "partition", F.col("offset").alias("at"), "rid",
                      F.col("poll").alias("x_poll"), F.col("ix").alias("x_ix"),
                      F.col("read_ns").alias("x_ns"))
             .join(F.broadcast(inside), ["tid", "partition", "at"]))
    x = (F.col("x_poll"), F.col("x_ix"), F.col("x_ns"), F.col("at"))
    y = (F.col("y_poll"), F.col("y_ix"), F.col("y_ns"), F.col("to"))
    z = (F.col("z_poll"), F.col("z_ix"), F.col("z_ns"), F.col("z_offset"))
    pairs = (there.join(ends, ["tid", "partition", "to", "rec", "rid"])
             .where(~F.col("consumer") | _before(x, y)))
    back = backs.select(F.col("rid").alias("z_rid"), F.col("tid").alias("z_tid"),
                        F.col("partition").alias("z_partition"),
                        F.col("poll").alias("z_poll"), F.col("ix").alias("z_ix"),
                        F.col("read_ns").alias("z_ns"),
                        F.col("offset").alias("z_offset"))
    between = ((F.col("rid") == F.col("z_rid")) & (F.col("tid") == F.col("z_tid"))
               & (F.col("partition") == F.col("z_partition")) & F.col("consumer")
               & _before(x, z) & ~_before(y, z))
    return (pairs.join(F.broadcast(back), between, "left_anti")
            .select("tid", "partition", "prev_offset", F.col("to").alias("offset"), "rec")
            .distinct().withColumn("skipped", F.lit(True)))


def _before(a: tuple[Column, ...], b: tuple[Column, ...]) -> Column:
    """Read ``a`` comes before read ``b`` of one reader: (poll, ix, read_ns, offset), the
    order of positions.READ_ORDER, is less (lexicographically; no column is null)."""
    out = a[-1] < b[-1]
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1]), strict=True):
        out = (x < y) | ((x == y) & out)
    return out


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
