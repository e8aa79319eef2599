"""A consumer's step back after a leader epoch change: the fact ``epoch_rise_before_reread``
of contract/known_bugs.py (librdkafka#4261).

librdkafka 2.1.0 validates its position when metadata shows a new leader epoch (KIP-320)
and then fetches again from the application's position, behind the records it had already
fetched: the application reads those twice, a step back within one session. The record
names the bug only when the observer saw the partition's leader epoch rise shortly before
the read that went back: the re-read follows the validation, and comes once the
application has read what the client held (seconds, not minutes).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from contract.known_bugs import EPOCH_VALIDATION_REREAD, known_bug
from contract.settings import Settings

from .fresh_ids import MAX_MOVES, OBSERVER_LAG_NS
from .observations import PartitionHistory

#: How long before the read that went back the epoch rise may have been observed: the
#: validation takes a round trip, then the application reads what the client held (the
#: stalled-reader-leader-move scenario holds its loop 4 s past the move).
REREAD_WITHIN_NS = 30_000_000_000


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


def rise_before_reread(rises: dict[str, list[int]]) -> Column:
    """True on nonmonotonic-poll rows within one session (not excused) whose partition's
    epoch rise was observed at most REREAD_WITHIN_NS before the read that went back
    (``event_ns``), or up to OBSERVER_LAG_NS after it."""
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
    at = F.col("event_ns")
    out: Column = F.lit(False)
    for key, times in sorted(rises.items()):
        for ts in times:
            out = out | ((tp == key) & (at + F.lit(OBSERVER_LAG_NS) >= F.lit(ts))
                         & (at - F.lit(REREAD_WITHIN_NS) <= F.lit(ts)))
    within = ~F.coalesce(F.col("excused"), F.lit(False))
    return (F.col("kind") == "nonmonotonic-poll") & within & F.coalesce(out, F.lit(False))
