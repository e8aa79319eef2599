"""A consumer's step back after a leader epoch change: the fact ``epoch_rise_before_reread``
of contract/known_bugs.py (librdkafka#4261).

librdkafka 2.1.0 validates its position when it learns of a new leader epoch (KIP-320) and
then fetches again from the *application's* position (the offset after the last record
``consume()`` returned), behind the records it had fetched past it and still holds: the
application reads those, then the same offsets again, from that position r. So a step back
onto r is the bug's only if the partition's leader epoch rose while the reader's position
was r: after its read of r - 1 that precedes the step (the reader's assignment when it read
nothing of the partition before r) and before its next read of r (the first read of r that
followed: the queued record's, or the step's own).

The steps are taken in the reader's order (history.read_order): within one ``consume()``
the order the client returned the records (``poll_index``), so a poll holding the rest of the
queued records and then re-fetched ones shows one step back, from the queued records' end
onto r, and the re-read goes on forward from there. One span names one step back: the
position moved on after the re-read, and another step back needs a span of its own. A
history that did not record ``poll_index`` has a poll's reads in offset order: a re-read
inside one poll shows there as steps onto each offset read twice; the first, onto r, is
named as above, the others' positions were held inside the poll (a span of one instant).

When the rise happened: the observer (workloads/observer.py) samples the partitions about
every 0.25 s, a leader in every sample (metadata), an epoch only when a ListOffsets answer
came in since the sample before. A new leader it shows at ``ts`` took office after the
sample before (``Change.prev_ts_ns``), a higher epoch under the same leader after the last
sample that carried an epoch (``Change.prev_epoch_ns``): the rise lies in ``(since, ts]``,
a bound each rise brings (a failed sample widens it), not a guessed lag. A rise fits a step
back when that span meets the span the position was r.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.known_bugs import EPOCH_VALIDATION_REREAD, known_bug
from contract.schemas import DRAIN_READER
from contract.settings import Settings

from .fresh_ids import MAX_MOVES
from .history import Event, poll_index, read_order, rebalances_of
from .observations import PartitionHistory


def reread_applies(settings: Settings) -> bool:
    """Whether the run's librdkafka may have the bug (its rises are worth naming)."""
    bug = known_bug(EPOCH_VALIDATION_REREAD)
    return bug is not None and settings.component_used(bug.component) and bug.affects(
        settings.known_bug_version(bug.component))


def epoch_rises(history: PartitionHistory) -> dict[str, list[tuple[int, int]]]:
    """``"topic:partition"`` -> ``(since_ns, ts_ns)`` of each new leader epoch the observer
    showed: a new leader (every election starts an epoch), or an epoch above the last it
    knew (its samples of a new leader may lack the epoch for a while; a sample without one
    is no change). The rise happened after ``since_ns`` (the sample before, for a leader;
    the last sample with an epoch, for an epoch) and by ``ts_ns``. None at all beyond
    :data:`MAX_MOVES`."""
    out: dict[str, list[tuple[int, int]]] = {}
    for key, changes in history.by_tp.items():
        leader: int | None = None
        epoch: int | None = None
        for c in changes:
            new_leader = c.leader >= 0 and leader is not None and c.leader != leader
            higher = (c.leader_epoch is not None and epoch is not None
                      and c.leader_epoch > epoch)
            since = c.prev_ts_ns if new_leader else c.prev_epoch_ns
            if (new_leader or higher) and since is not None:
                out.setdefault(key, []).append((since, c.ts_ns))
            if c.leader >= 0:
                leader = c.leader
            if c.leader_epoch is not None:
                epoch = c.leader_epoch
    if sum(len(v) for v in out.values()) > MAX_MOVES:
        return {}
    return out


def assignments(events: list[Event]) -> dict[str, list[tuple[int, int]]]:
    """``"reader:topic:partition"`` -> ``(poll, ts_ns)`` of the reader's recorded
    assignments of the partition. An assign-mode reader records none."""
    return rebalances_of(events, "assigned")


@dataclass(frozen=True)
class Reread:
    """A step back of ``reader`` on ``topic``:``partition`` in poll ``poll``, onto
    ``offset`` (r: where its re-read began); the span its position was r: from
    ``held_from_ns`` (its read of r - 1 before the step, or its assignment) to
    ``held_to_ns`` (its next read of r)."""

    reader: str
    topic: str
    partition: int
    poll: int
    offset: int
    held_from_ns: int
    held_to_ns: int

    @property
    def key(self) -> str:
        return f"{self.reader}:{self.topic}:{self.partition}"


#: A read's place in its reader's order (history.read_order): poll, place in the poll,
#: read_ns, offset.
Place = tuple[int, int, int, int]


def rereads(reads: DataFrame, rises: dict[str, list[tuple[int, int]]],
            assigned: dict[str, list[tuple[int, int]]]) -> list[Reread]:
    """The steps back of consumers on partitions with observed rises, each with the span
    its position was the offset it stepped back onto (see the module). ``assigned``:
    ``"reader:topic:partition"`` -> ``(poll, ts_ns)`` of its assignments (``rebalance``
    events), the start of a position nothing was read before. Two small jobs over those
    partitions' reads, none without rises: a window over them that finds the steps back,
    and a broadcast join picking the reads of r - 1 and r of the few steps found."""
    tps = [(k.rpartition(":")[0], int(k.rpartition(":")[2])) for k in rises
           if k.rpartition(":")[2].isdigit()]
    if not tps:
        return []
    spark = reads.sparkSession
    marks = spark.createDataFrame(tps, "topic string, partition int")
    mine = (reads.where(F.col("reader") != DRAIN_READER)
            .join(F.broadcast(marks), ["topic", "partition"], "left_semi")
            .select("reader", "topic", "partition", "offset", "poll", "read_ns",
                    poll_index().alias("ix"), "poll_index"))
    order = Window.partitionBy("reader", "topic", "partition").orderBy(*read_order())
    steps = (mine.select("*", F.lag("offset").over(order).alias("prev_offset"))
             .where(F.col("offset") <= F.col("prev_offset"))
             .select("reader", "topic", "partition", "poll", "ix", "read_ns",
                     F.col("offset").alias("r")).collect())
    if not steps:
        return []
    backs = spark.createDataFrame(
        sorted({(b["reader"], b["topic"], b["partition"], b["r"]) for b in steps}),
        "reader string, topic string, partition int, r long")
    near = (mine.join(F.broadcast(backs), ["reader", "topic", "partition"])
            .where(F.col("offset").between(F.col("r") - 1, F.col("r")))
            .select("reader", "topic", "partition", "offset", "poll", "ix", "read_ns")
            .distinct().collect())
    found: dict[tuple[str, str, int], list[Place]] = {}
    for x in near:
        found.setdefault((x["reader"], x["topic"], x["partition"]), []).append(
            (x["poll"], x["ix"], x["read_ns"], x["offset"]))
    by_tp: dict[tuple[str, str, int], list[Place]] = {}
    for b in steps:
        by_tp.setdefault((b["reader"], b["topic"], b["partition"]), []).append(
            (b["poll"], b["ix"], b["read_ns"], b["r"]))
    out = []
    for tp, places in sorted(by_tp.items()):
        places.sort()
        for step in places:
            span = _span(tp, step, sorted(found.get(tp, [])), assigned, places)
            if span is not None:
                out.append(span)
    return out


def _span(tp: tuple[str, str, int], step: Place, rows: list[Place],
          assigned: dict[str, list[tuple[int, int]]], steps: list[Place]) -> Reread | None:
    """The span the position was r before ``step`` (a step back onto r), from the reader's
    reads of r - 1 and r (``rows``, in its order); None when there is none or when another
    step back (``steps``) lies between the span's start and this one."""
    poll, _, ns, r = step
    before = [x for x in rows if x[3] == r - 1 and x < step]
    if before:
        start: tuple[int, ...] = before[-1]
        from_ns = before[-1][2]
    else:  # nothing of r - 1 read before: the position r was the one it was assigned
        starts = [(p, t) for p, t in assigned.get(":".join(map(str, tp)), []) if p <= poll]
        if not starts:
            return None  # its start is not recorded: no span, nothing named
        start = (max(starts)[0],)
        from_ns = max(starts)[1]
    nxt = [x for x in rows if x[3] == r and start < x <= step]
    # one validation, one step back: once the reader stepped back after the position was r,
    # the position moved on, and a later step back to r needs a span of its own
    if not nxt or any(start < q < step for q in steps):
        return None
    return Reread(tp[0], tp[1], tp[2], poll, r, from_ns, min(nxt)[2])


def reread_targets(reads: DataFrame,
                   rises: dict[str, list[tuple[int, int]]],
                   assigned: dict[str, list[tuple[int, int]]]) -> list[tuple[str, int, int]]:
    """``("reader:topic:partition", poll, offset)`` of each step back (:func:`rereads`) with
    a rise of its partition in the span its position was the offset it stepped back onto:
    the rise after ``since_ns`` and by ``ts_ns``, the span from ``held_from_ns`` to
    ``held_to_ns``, and the two meet."""
    if not rises:
        return []
    out = []
    for b in rereads(reads, rises, assigned):
        spans = rises.get(f"{b.topic}:{b.partition}", [])
        if any(since < b.held_to_ns and ts >= b.held_from_ns for since, ts in spans):
            out.append((b.key, b.poll, b.offset))
    return out


def rise_before_reread(targets: list[tuple[str, int, int]]) -> Column:
    """True on the nonmonotonic-poll rows within one session (not excused) that are steps
    of ``targets`` (reread_targets): their reader and partition, poll and offset."""
    key = F.concat_ws(":", F.col("reader"), F.col("topic"), F.col("partition").cast("string"))
    out: Column = F.lit(False)
    for k, poll, offset in targets:
        out = out | ((key == k) & (F.col("poll") == poll) & (F.col("offset") == offset))
    within = ~F.coalesce(F.col("excused"), F.lit(False))
    return (F.col("kind") == "nonmonotonic-poll") & within & F.coalesce(out, F.lit(False))
