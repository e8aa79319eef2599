"""A consumer's step back after a leader epoch change: the fact ``epoch_rise_before_reread``
of contract/known_bugs.py (librdkafka#4261).

librdkafka 2.1.0 validates its position when it learns of a new leader epoch (KIP-320) and
then fetches again from the position the application had when the validation began, behind
the records a fetch response delivered meanwhile: the application reads those twice, a step
back within one session to that position. So the offset the reader went back to, o, was its
position when its client learned of the rise: it had first read o - 1 before then and o only
after. The client learns of a rise no earlier than the rise itself (the observer shows it up
to OBSERVER_LAG_NS late) and no later than its next periodic metadata refresh (the reader's
``topic.metadata.refresh.interval.ms``). A step back is named only when a rise the observer
saw fits: the reader's first read of o came after the rise (less the lag), its first read of
o - 1 before the rise plus the refresh interval, and the read that went back after the rise
(less the lag).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.known_bugs import EPOCH_VALIDATION_REREAD, known_bug
from contract.settings import Settings

from .fresh_ids import MAX_MOVES, OBSERVER_LAG_NS
from .observations import PartitionHistory


def reread_applies(settings: Settings) -> bool:
    """Whether the run's librdkafka may have the bug (its rises are worth naming)."""
    bug = known_bug(EPOCH_VALIDATION_REREAD)
    return bug is not None and settings.component_used(bug.component) and bug.affects(
        settings.known_bug_version(bug.component))


def epoch_rises(history: PartitionHistory) -> dict[str, list[int]]:
    """``"topic:partition"`` -> when the observer first showed a new leader epoch: a new
    leader (every election starts an epoch), or an epoch above the last one it knew (its
    samples of a new leader may lack the epoch for a while; a sample without one is no
    change). None at all beyond :data:`MAX_MOVES`."""
    out: dict[str, list[int]] = {}
    for key, changes in history.by_tp.items():
        leader: int | None = None
        epoch: int | None = None
        for c in changes:
            new_leader = c.leader >= 0 and leader is not None and c.leader != leader
            higher = (c.leader_epoch is not None and epoch is not None
                      and c.leader_epoch > epoch)
            if new_leader or higher:
                out.setdefault(key, []).append(c.ts_ns)
            if c.leader >= 0:
                leader = c.leader
            if c.leader_epoch is not None:
                epoch = c.leader_epoch
    if sum(len(v) for v in out.values()) > MAX_MOVES:
        return {}
    return out


def reread_targets(spark: SparkSession, reads: DataFrame, rises: dict[str, list[int]],
                   settings: Settings) -> list[tuple[str, int, int, int]]:
    """``("reader:topic:partition", lo, hi, rise_ns)``: for each observed rise and each
    reader of its partition, the offsets o the reader's position may have held when its
    client learned of the rise (see the module): its first read of o after ``rise_ns -
    OBSERVER_LAG_NS``, of o - 1 before ``rise_ns`` plus its refresh interval. In a reader's
    monotone first pass that is the range from one past the last offset first read by the
    earlier time to one past the last first read before the later. No job without rises."""
    if not rises:
        return []
    rows = []
    for key, times in rises.items():
        topic, _, partition = key.rpartition(":")
        if partition.isdigit():
            rows += [(topic, int(partition), int(t)) for t in times]
    if not rows:
        return []
    marks = spark.createDataFrame(rows, "topic string, partition int, rise_ns long")
    # each reader's refresh interval ("" names no reader: the default)
    refresh: Column = F.lit(settings.metadata_refresh_ms("") * 1_000_000)
    for reader, ms in sorted(settings.reader_metadata_refresh_ms.items()):
        refresh = F.when(F.col("reader") == reader, F.lit(ms * 1_000_000)).otherwise(refresh)
    first = (reads.join(F.broadcast(marks.select("topic", "partition").distinct()),
                        ["topic", "partition"])
             .groupBy("reader", "topic", "partition", "offset")
             .agg(F.min("read_ns").alias("first_ns")))
    ranges = (first.join(F.broadcast(marks), ["topic", "partition"])
              .groupBy("reader", "topic", "partition", "rise_ns")
              .agg(F.min("offset").alias("start"),
                   F.max(F.when(F.col("first_ns") <= F.col("rise_ns") - OBSERVER_LAG_NS,
                                F.col("offset"))).alias("before"),
                   F.max(F.when(F.col("first_ns") < F.col("rise_ns") + refresh,
                                F.col("offset"))).alias("by")))
    out = []
    for r in ranges.collect():
        lo = r["start"] if r["before"] is None else r["before"] + 1
        if r["by"] is None:  # nothing read before the client must have learned of it
            continue
        out.append((f"{r['reader']}:{r['topic']}:{r['partition']}", int(lo), int(r["by"]) + 1,
                    int(r["rise_ns"])))
    return sorted(out)


def rise_before_reread(targets: list[tuple[str, int, int, int]]) -> Column:
    """True on nonmonotonic-poll rows within one session (not excused) that went back to an
    offset of one of ``targets``' ranges (reread_targets) of their reader and partition,
    the read that went back (``event_ns``) coming after that rise (less the observer's
    lag)."""
    key = F.concat_ws(":", F.col("reader"), F.col("topic"), F.col("partition").cast("string"))
    out: Column = F.lit(False)
    for k, lo, hi, rise_ns in targets:
        out = out | ((key == k) & F.col("offset").between(lo, hi)
                     & (F.col("event_ns") >= F.lit(rise_ns - OBSERVER_LAG_NS)))
    within = ~F.coalesce(F.col("excused"), F.lit(False))
    return (F.col("kind") == "nonmonotonic-poll") & within & F.coalesce(out, F.lit(False))
