"""Cluster observations reduced to their changes (leader, ISR, leader epoch per partition),
and what the checker derives from them: power-loss coverage of the ISR and the scenario
mechanisms of docs/CONVENTIONS.md."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.events import Event
from contract.faults import POWER_LOSS

#: At most this many change rows are brought to the driver (they are few: one per election
#: or ISR change, not one per sample).
MAX_CHANGES = 200_000

#: Power-loss events this close together count as one simultaneous crash.
POWER_LOSS_WINDOW_NS = 5_000_000_000


@dataclass(frozen=True)
class Change:
    """A partition's state after a change (or its first sample)."""

    ts_ns: int
    topic: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int | None
    prev_leader: int | None
    prev_isr: tuple[int, ...] | None
    prev_epoch: int | None
    # when the observer took the sample before this one (None on the first): a change
    # happened after it, so a change's true time lies in (prev_ts_ns, ts_ns]
    prev_ts_ns: int | None = None
    # the last sample before this one whose ListOffsets answer carried an epoch (most lack
    # one): an epoch rise under one leader happened after it
    prev_epoch_ns: int | None = None

    def brief(self) -> dict[str, Any]:
        return {"ts_ns": self.ts_ns, "leader": self.leader, "isr": list(self.isr),
                "leader_epoch": self.leader_epoch, "prev_leader": self.prev_leader,
                "prev_isr": None if self.prev_isr is None else list(self.prev_isr),
                "prev_leader_epoch": self.prev_epoch}


def tp_key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


class PartitionHistory:
    """The changes of every partition, sorted by time."""

    def __init__(self, changes: list[Change]):
        self.by_tp: dict[str, list[Change]] = {}
        for c in sorted(changes, key=lambda c: c.ts_ns):
            self.by_tp.setdefault(tp_key(c.topic, c.partition), []).append(c)
        self._times = {k: [c.ts_ns for c in v] for k, v in self.by_tp.items()}

    @property
    def all(self) -> list[Change]:
        return [c for v in self.by_tp.values() for c in v]

    def state_at(self, key: str, ts_ns: int) -> Change | None:
        """The last known state of a partition at ``ts_ns``."""
        times = self._times.get(key)
        if not times:
            return None
        i = bisect.bisect_right(times, ts_ns) - 1
        return self.by_tp[key][i] if i >= 0 else None

    def between(self, key: str, lo: int, hi: int) -> list[Change]:
        times = self._times.get(key, [])
        i, j = bisect.bisect_left(times, lo), bisect.bisect_right(times, hi)
        return self.by_tp.get(key, [])[i:j]

    def first_leadership_change_after(self, key: str, ts_ns: int) -> Change | None:
        """First leader or epoch change after ``ts_ns``: when an unreplicated tail goes."""
        for c in self.between(key, ts_ns + 1, 2**63 - 1):
            if c.prev_leader is not None and (
                c.leader != c.prev_leader
                or (c.prev_epoch is not None and c.leader_epoch != c.prev_epoch)
            ):
                return c
        return None


def collect_changes(obs: DataFrame) -> tuple[PartitionHistory, int]:
    """Reduce observations to change rows on the cluster, bring those to the driver.

    The observer learns a partition's leader epoch from a ListOffsets answer that misses
    about every other sample; a missing epoch means "not learned this time", so it is filled
    with the last one learned under the same leader. Otherwise every sample would count as a
    change (epoch 0, null, 0, …) and a null-to-known flip would look like a new leader term.
    """
    order = Window.partitionBy("topic", "partition").orderBy("ts_ns")
    state = obs.where(F.col("ts_ns").isNotNull()).select(
        "ts_ns", "topic", "partition",
        F.coalesce(F.col("leader"), F.lit(-1)).alias("leader"),
        F.array_sort(F.coalesce(F.col("isr"), F.array().cast("array<int>"))).alias("isr"),
        "leader_epoch",
        F.when(F.col("leader_epoch").isNotNull(), F.col("ts_ns")).alias("answered_ns"),
    )
    new_term = ~F.lag("leader").over(order).eqNullSafe(F.col("leader"))
    terms = state.withColumn(
        "term", F.sum(new_term.cast("int")).over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    in_term = Window.partitionBy("topic", "partition", "term").orderBy("ts_ns").rowsBetween(
        Window.unboundedPreceding, 0)
    filled = terms.withColumn("leader_epoch",
                              F.last("leader_epoch", ignorenulls=True).over(in_term))
    with_prev = (
        filled.withColumn("prev_leader", F.lag("leader").over(order))
        .withColumn("prev_isr", F.lag("isr").over(order))
        .withColumn("prev_epoch", F.lag("leader_epoch").over(order))
        .withColumn("prev_ts_ns", F.lag("ts_ns").over(order))
        .withColumn("prev_epoch_ns", F.last("answered_ns", ignorenulls=True).over(
            order.rowsBetween(Window.unboundedPreceding, -1)))
        .withColumn("first", F.col("prev_ts_ns").isNull())
    )
    changed = with_prev.where(
        F.col("first")
        | (F.col("leader") != F.col("prev_leader"))
        | (F.col("isr") != F.col("prev_isr"))
        | ~F.col("leader_epoch").eqNullSafe(F.col("prev_epoch"))
    )
    rows = changed.limit(MAX_CHANGES + 1).collect()
    changes = [
        Change(
            ts_ns=r["ts_ns"], topic=r["topic"], partition=r["partition"], leader=r["leader"],
            isr=tuple(r["isr"]), leader_epoch=r["leader_epoch"],
            prev_leader=None if r["first"] else r["prev_leader"],
            prev_isr=None if r["first"] else tuple(r["prev_isr"] or ()),
            prev_epoch=None if r["first"] else r["prev_epoch"],
            prev_ts_ns=r["prev_ts_ns"], prev_epoch_ns=r["prev_epoch_ns"],
        )
        for r in rows[:MAX_CHANGES]
    ]
    return PartitionHistory(changes), len(rows)


def node_ids(targets: tuple[Any, ...]) -> set[int]:
    out: set[int] = set()
    for t in targets:
        try:
            out.add(int(str(t).rsplit("-", 1)[-1]))
        except ValueError:
            continue
    return out


def _observed_isr(parts: PartitionHistory, key: str, ts_ns: int) -> tuple[int, ...]:
    state = parts.state_at(key, ts_ns - 1) or parts.state_at(key, ts_ns)
    return state.isr if state is not None else ()


def _covering_crashes(
    events: list[Event], parts: PartitionHistory, partitions: list[str], brokers: int | None
) -> list[tuple[str, int, tuple[int, ...]]]:
    """(partition key, crash time, the ISR it hit) for every crash that hit a whole ISR."""
    crashes = [e for e in events if e.kind == POWER_LOSS and e.phase in ("start", "instant")]
    out: list[tuple[str, int, tuple[int, ...]]] = []
    for e in crashes:
        group = [c for c in crashes if e.ts_ns - POWER_LOSS_WINDOW_NS <= c.ts_ns <= e.ts_ns]
        hit: set[int] = set()
        for c in group:
            hit |= node_ids(c.targets)
        first = min(group, key=lambda c: c.ts_ns)
        recorded = first.detail.get("isr_before") or {}
        for key in partitions:
            isr = recorded.get(key) or _observed_isr(parts, key, first.ts_ns)
            covered = set(isr) <= hit if isr else (brokers is not None and len(hit) >= brokers)
            if covered:
                out.append((key, e.ts_ns, tuple(isr or ())))
    return out


def power_loss_coverage(
    events: list[Event], parts: PartitionHistory, partitions: list[str], brokers: int | None
) -> dict[str, int]:
    """Partitions whose every in-sync replica lost power together: key -> latest such time.

    The ISR is the one the first crash of the group recorded from the cluster's metadata just
    before it struck (``detail.isr_before``), else the one observed just before it; a partition
    with neither counts as covered only when every broker of the cluster lost power.
    """
    out: dict[str, int] = {}
    for key, ts, _ in _covering_crashes(events, parts, partitions, brokers):
        out[key] = max(out.get(key, 0), ts)
    return out
