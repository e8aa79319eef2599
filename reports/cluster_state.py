"""Leader and ISR of each partition over time, from ``history/observations.parquet``.

The observer samples every partition a few times a second, so a long run holds millions of
samples. We keep at most one sample per partition per pixel column (``COLUMNS``) and merge
equal neighbours into segments: the plot's size depends on the page width, not the run length.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .datasets import read_table

COLUMNS = 1000  # about one per pixel of the plot
MAX_PARTITIONS = 24  # lanes drawn; anomalous partitions first, the rest summarised


@dataclass(frozen=True)
class Segment:
    """A stretch of time in which a partition's leader and ISR did not change."""

    start_s: float
    end_s: float
    leader: int  # -1: no leader (offline)
    isr: tuple[int, ...]
    epoch: int | None


@dataclass
class PartitionLane:
    """One partition's history of leadership and in-sync replicas."""

    topic: str
    partition: int
    segments: list[Segment]
    replicas: tuple[int, ...]

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    @property
    def leader_changes(self) -> int:
        """How many times the leader changed (offline counts as a change)."""
        pairs = zip(self.segments, self.segments[1:], strict=False)
        return sum(1 for a, b in pairs if a.leader != b.leader)

    @property
    def min_isr(self) -> int:
        return min((len(s.isr) for s in self.segments), default=0)

    @property
    def offline_s(self) -> float:
        return sum(s.end_s - s.start_s for s in self.segments if s.leader < 0)


@dataclass
class ClusterState:
    """Every partition's lane, and the brokers seen in any replica set."""

    lanes: list[PartitionLane]
    brokers: list[int]
    hidden: int = 0  # partitions not drawn (beyond MAX_PARTITIONS)


def load_cluster_state(
    path: Path, t0_ns: int, duration_s: float, focus: set[tuple[str, int]] | None = None
) -> ClusterState:
    """Read observations, thin them to ``COLUMNS`` per partition, merge them into segments.

    ``focus`` (anomalous partitions) are drawn first when there are too many to draw all.
    """
    cols = ["ts_ns", "topic", "partition", "leader", "isr", "replicas", "leader_epoch"]
    table = read_table(path, cols)
    if table.num_rows == 0:
        return ClusterState([], [])
    table = table.filter(pc.is_valid(table.column("ts_ns")))
    ts = table.column("ts_ns").to_numpy(zero_copy_only=False).astype("int64")
    part = pc.fill_null(table.column("partition"), -1).to_numpy(zero_copy_only=False)
    topic_codes, topics = _codes(table.column("topic"))
    span_ns = max(int(duration_s * 1e9), 1)
    column = np.clip((ts - t0_ns) * COLUMNS // span_ns, 0, COLUMNS - 1)
    # Keep the last sample of each (topic, partition, column): sort, then take group ends.
    order = np.lexsort((ts, column, part, topic_codes))
    key = np.stack([topic_codes[order], part[order], column[order]], axis=1)
    last = np.ones(len(order), dtype=bool)
    last[:-1] = np.any(key[1:] != key[:-1], axis=1)
    keep = order[last]
    picked = table.take(pa.array(keep))
    rows = picked.to_pylist()
    lanes: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row, col in zip(rows, column[keep], strict=True):
        row["_col"] = int(col)
        lanes.setdefault((str(row["topic"]), int(row["partition"])), []).append(row)
    brokers: set[int] = set()
    out: list[PartitionLane] = []
    for (topic, p), samples in lanes.items():
        segments: list[Segment] = []
        replicas: tuple[int, ...] = ()
        for i, s in enumerate(samples):
            leader = int(s["leader"]) if s["leader"] is not None else -1
            isr = tuple(sorted(int(b) for b in (s["isr"] or [])))
            replicas = tuple(int(b) for b in (s["replicas"] or replicas))
            brokers.update(isr, replicas, [leader] if leader >= 0 else [])
            start = float(s["_col"]) * duration_s / COLUMNS
            nxt = samples[i + 1]["_col"] if i + 1 < len(samples) else COLUMNS
            end = float(nxt) * duration_s / COLUMNS
            epoch = s["leader_epoch"]
            seg = Segment(start, end, leader, isr, None if epoch is None else int(epoch))
            if segments and (segments[-1].leader, segments[-1].isr) == (leader, isr):
                prev = segments[-1]
                # The observer misses the epoch in about every other sample: keep the known one.
                epoch_now = seg.epoch if seg.epoch is not None else prev.epoch
                segments[-1] = Segment(prev.start_s, end, leader, isr, epoch_now)
            else:
                segments.append(seg)
        out.append(PartitionLane(topic, p, segments, replicas))
    focus = focus or set()
    out.sort(key=lambda lane: ((lane.topic, lane.partition) not in focus, lane.topic,
                               lane.partition))
    hidden = max(0, len(out) - MAX_PARTITIONS)
    return ClusterState(out[:MAX_PARTITIONS], sorted(brokers), hidden)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer codes for a string column (topics), so numpy can sort on it."""
    encoded = pc.fill_null(column.cast(pa.string()), "").combine_chunks().dictionary_encode()
    return (
        encoded.indices.to_numpy(zero_copy_only=False).astype("int64"),
        [str(v) for v in encoded.dictionary.to_pylist()],
    )
