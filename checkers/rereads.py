"""A consumer's step back after a leader epoch change: the fact ``epoch_rise_before_reread``
of contract/known_bugs.py (librdkafka#4261).

librdkafka 2.1.0 validates its position when it learns of a new leader epoch (KIP-320) and
then fetches again from the *application's* position (the offset after the last record
``consume()`` returned), behind the records it had fetched past it and still holds: the
application reads those, then the same offsets again, from that position r. So a step back
is the bug's only if the partition's leader epoch rose while the reader's position was r:
after its read of r - 1 that precedes the re-read (the last one before the poll that went
back; the reader's assignment when it read nothing of the partition before r) and before
its next read of r (the first read of r that followed).

Which r: a reader's reads of one ``consume()`` share a time and the checker orders them by
offset, so a poll holding the queued records and the re-fetched ones shows as one batch.
Its re-read begins at the poll's lowest offset: the queued records start at the position
the application had, and the re-fetch at the position the validation took, at or below it.
Every step back of that poll (onto its first offset, or onto an offset read twice inside
it) names the bug with that r, and only that r. The re-fetched records can run on into the
next poll: in the checker's order that poll steps back from the queued records' end to one
past where the re-fetch the poll before held ended (its last offset read twice when the
re-fetch overlapped the queued records, else the offset before its gap: the re-fetch lay
below them, and that poll shows a jump inside it); such a poll goes on with that re-read and
is named with it, by its span. One span names one step
back: the position moved on after the re-read, and another step back needs a span of its own.

When the rise happened: the observer (workloads/observer.py) samples the partitions about
every 0.25 s, a leader in every sample (metadata), an epoch only when a ListOffsets answer
came in since the sample before. A new leader it shows at ``ts`` took office after the
sample before (``Change.prev_ts_ns``), a higher epoch under the same leader after the last
sample that carried an epoch (``Change.prev_epoch_ns``): the rise lies in ``(since, ts]``,
a bound each rise brings (a failed sample widens it), not a guessed lag. A rise fits a step
back when that span meets the span the position was r.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.known_bugs import EPOCH_VALIDATION_REREAD, known_bug
from contract.schemas import DRAIN_READER
from contract.settings import Settings

from .fresh_ids import MAX_MOVES
from .history import Event, rebalances_of
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
class RereadPoll:
    """A poll of ``reader`` that went back on ``topic``:``partition``, its re-read beginning
    at ``offset`` (r); the span its position was r: from ``held_from_ns`` (its read of r - 1
    before the poll, or its assignment) to ``held_to_ns`` (its next read of r)."""

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


def reread_polls(reads: DataFrame, rises: dict[str, list[tuple[int, int]]],
                 assigned: dict[str, list[tuple[int, int]]]) -> list[RereadPoll]:
    """The polls of consumers that went back on a partition with observed rises, each with
    the span its position was the offset the re-read began at (see the module).
    ``assigned``: ``"reader:topic:partition"`` -> ``(poll, ts_ns)`` of its assignments
    (``rebalance`` events), the start of a position nothing was read before. Two small
    jobs over those partitions' reads, none without rises: their polls (two aggregations
    and a window over the polls), and a broadcast join picking the reads of r - 1 and r of
    the few polls that went back."""
    tps = [(k.rpartition(":")[0], int(k.rpartition(":")[2])) for k in rises
           if k.rpartition(":")[2].isdigit()]
    if not tps:
        return []
    spark = reads.sparkSession
    marks = spark.createDataFrame(tps, "topic string, partition int")
    mine = (reads.where(F.col("reader") != DRAIN_READER)
            .join(F.broadcast(marks), ["topic", "partition"], "left_semi"))
    order = Window.partitionBy("reader", "topic", "partition").orderBy("poll")
    in_poll = Window.partitionBy("reader", "topic", "partition", "poll").orderBy("offset")
    per_offset = (mine.groupBy("reader", "topic", "partition", "poll", "offset").count()
                  .select("*", F.lead("offset").over(in_poll).alias("next_offset")))
    # where a poll's re-fetch ended: its last offset read twice (the re-fetch overlapped
    # the queued records), else the offset before its first gap (it lay below them)
    polls = (per_offset.groupBy("reader", "topic", "partition", "poll")
             .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                  F.max("count").alias("most"),
                  F.coalesce(F.max(F.when(F.col("count") > 1, F.col("offset"))),
                             F.min(F.when(F.col("next_offset") > F.col("offset") + 1,
                                          F.col("offset")))).alias("twice_hi"))
             .select("*", F.lag("hi").over(order).alias("prev_hi"),
                     F.lag("poll").over(order).alias("prev_poll")))
    # the polls that hold a step back: onto their first offset, or inside them
    back = (polls.where((F.col("lo") <= F.col("prev_hi")) | (F.col("most") > 1))
            .select("reader", "topic", "partition", F.col("poll").alias("back_poll"),
                    F.col("lo").alias("r"), "prev_poll", "twice_hi").collect())
    if not back:
        return []
    backs = spark.createDataFrame([(b["reader"], b["topic"], b["partition"], b["back_poll"],
                                    b["r"]) for b in back],
                                  "reader string, topic string, partition int, "
                                  "back_poll long, r long")
    near = (mine.join(F.broadcast(backs), ["reader", "topic", "partition"])
            .where((F.col("poll") <= F.col("back_poll"))
                   & F.col("offset").between(F.col("r") - 1, F.col("r")))
            .select("reader", "topic", "partition", "back_poll", "r", "offset", "poll",
                    "read_ns").collect())
    found: dict[tuple[str, str, int, int], list[tuple[int, int, int]]] = {}
    for x in near:
        found.setdefault((x["reader"], x["topic"], x["partition"], x["back_poll"]), []).append(
            (x["poll"], x["offset"], x["read_ns"]))
    twice = {(b["reader"], b["topic"], b["partition"], int(b["back_poll"])): b["twice_hi"]
             for b in back}
    done: dict[tuple[str, str, int, int], RereadPoll | None] = {}
    for b in sorted(back, key=lambda b: (b["reader"], b["topic"], b["partition"],
                                         b["back_poll"])):
        tp = (b["reader"], b["topic"], b["partition"])
        r, p = int(b["r"]), int(b["back_poll"])
        prev = (*tp, -1 if b["prev_poll"] is None else int(b["prev_poll"]))
        if prev in done and twice[prev] == r - 1:
            # the poll before went back, and its re-fetch ended at r - 1: this poll goes on
            # with that re-read, a step back only in the checker's order of that poll's
            # reads, begun where that one began
            head = done[prev]
            done[(*tp, p)] = None if head is None else replace(head, poll=p)
            continue
        done[(*tp, p)] = _span(b, found.get((*tp, p), []), assigned,
                               [q for (*k, q) in done if tuple(k) == tp])
    out = [x for x in done.values() if x is not None]
    return sorted(out, key=lambda x: (x.key, x.poll))


def _span(b: Row, rows: list[tuple[int, int, int]],
          assigned: dict[str, list[tuple[int, int]]], backs: list[int]) -> RereadPoll | None:
    """The span ``b``'s position was r (its lowest offset), from its reads (poll, offset,
    read_ns) of r - 1 and r up to its poll; None when there is none or when a poll between
    (``backs``, the earlier ones of the same reader and partition) went back already."""
    r, p = int(b["r"]), int(b["back_poll"])
    rows = sorted(rows)
    before = [(poll, ns) for poll, off, ns in rows if off == r - 1 and poll < p]
    if before:
        from_poll, from_ns = before[-1]
    else:  # nothing of r - 1 read before: the position r was the one it was assigned
        key = f"{b['reader']}:{b['topic']}:{b['partition']}"
        starts = [(poll, ns) for poll, ns in assigned.get(key, []) if poll <= p]
        if not starts:
            return None  # its start is not recorded: no span, nothing named
        from_poll, from_ns = max(starts)
    nxt = [ns for poll, off, ns in rows if off == r and poll >= from_poll]
    # one validation, one step back: once a poll went back after the position was r, the
    # position moved on, and a later step back to r needs a span of its own
    if not nxt or any(from_poll < q < p for q in backs):
        return None
    return RereadPoll(b["reader"], b["topic"], int(b["partition"]), p, r, from_ns, min(nxt))


def reread_targets(reads: DataFrame,
                   rises: dict[str, list[tuple[int, int]]],
                   assigned: dict[str, list[tuple[int, int]]]) -> list[tuple[str, int]]:
    """``("reader:topic:partition", poll)`` of each poll that went back (reread_polls) with
    a rise of its partition in the span its position was the offset its re-read began at:
    the rise after ``since_ns`` and by ``ts_ns``, the span from ``held_from_ns`` to
    ``held_to_ns``, and the two meet."""
    if not rises:
        return []
    out = []
    for b in reread_polls(reads, rises, assigned):
        spans = rises.get(f"{b.topic}:{b.partition}", [])
        if any(since < b.held_to_ns and ts >= b.held_from_ns for since, ts in spans):
            out.append((b.key, b.poll))
    return out


def rise_before_reread(targets: list[tuple[str, int]]) -> Column:
    """True on nonmonotonic-poll rows within one session (not excused) of a poll of
    ``targets`` (reread_targets) of their reader and partition."""
    key = F.concat_ws(":", F.col("reader"), F.col("topic"), F.col("partition").cast("string"))
    out: Column = F.lit(False)
    for k, poll in targets:
        out = out | ((key == k) & (F.col("poll") == poll))
    within = ~F.coalesce(F.col("excused"), F.lit(False))
    return (F.col("kind") == "nonmonotonic-poll") & within & F.coalesce(out, F.lit(False))
