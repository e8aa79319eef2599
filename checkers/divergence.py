"""Replica divergence: compare the brokers' own log segments of each partition offset by
offset, from the log directories the run copies to ``logs/data/broker-<id>/``.

Only offsets held by both replicas of a pair, below the smaller of their log ends, are
compared. Identical batches (same base offset, last offset and CRC) are skipped without
decoding; only batches that differ are read record by record.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from .runfiles import RunDir
from .segments import Batch, Record, batch_records, iter_batches

LOG_DATA = "logs/data"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT = re.compile(r"^(\d+)\.log$")


@dataclass
class DivergenceResult:
    """What the divergence check found, and what it looked at."""

    checked: bool
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[str] = field(default_factory=list)
    partitions: int = 0
    offsets_compared: int = 0
    note: str = ""
    #: "topic:partition" -> how many replicas' copies of it were found (compared or not)
    copies: dict[str, int] = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        return {"checked": self.checked, "replicas": self.replicas,
                "partitions": self.partitions, "offsets_compared": self.offsets_compared,
                "copies": dict(sorted(self.copies.items())),
                **({"note": self.note} if self.note else {})}


class _Replica:
    """One replica's batches of a partition, in offset order."""

    def __init__(self, batches: list[Batch]):
        self.batches = sorted(batches, key=lambda b: b.base_offset)
        self.bases = [b.base_offset for b in self.batches]
        self.end = max((b.last_offset + 1 for b in self.batches), default=0)
        self.signatures = {b.signature for b in self.batches}
        self._records: dict[int, dict[int, Record]] = {}

    def record(self, offset: int) -> Record | None:
        i = bisect.bisect_right(self.bases, offset) - 1
        if i < 0 or self.batches[i].last_offset < offset:
            return None
        if i not in self._records:
            self._records[i] = {r.offset: r for r in batch_records(self.batches[i])}
        return self._records[i].get(offset)


def compare_partition(
    topic: str, partition: int, replicas: dict[str, list[Batch]], max_examples: int = 32
) -> tuple[int, list[dict[str, Any]], int]:
    """(divergent offsets, examples, offsets compared) for one partition."""
    reps = {name: _Replica(b) for name, b in sorted(replicas.items())}
    names = list(reps)
    diverged: dict[int, dict[str, Record]] = {}
    compared = 0
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ra, rb = reps[a], reps[b]
            limit = min(ra.end, rb.end)
            compared = max(compared, limit)
            suspects: set[int] = set()
            for mine, other in ((ra, rb), (rb, ra)):
                for batch in mine.batches:
                    if batch.base_offset >= limit:
                        break
                    if batch.signature not in other.signatures:
                        suspects.update(range(batch.base_offset, min(batch.last_offset + 1,
                                                                      limit)))
            for off in sorted(suspects):
                x, y = ra.record(off), rb.record(off)
                if x is None or y is None or x.digest == y.digest:
                    continue
                slot = diverged.setdefault(off, {})
                slot[a], slot[b] = x, y
    examples = []
    for off in sorted(diverged)[:max_examples]:
        examples.append({
            "topic": topic, "partition": partition, "offset": off,
            "replicas": {
                name: {"digest": r.digest, "value_size": r.size, "control": r.control,
                       "value_prefix_hex": r.value_prefix,
                       "leader_epoch": _epoch_at(reps[name], off)}
                for name, r in sorted(diverged[off].items())
            },
        })
    return len(diverged), examples, compared


def _epoch_at(rep: _Replica, offset: int) -> int | None:
    i = bisect.bisect_right(rep.bases, offset) - 1
    return rep.batches[i].leader_epoch if i >= 0 else None


def _segment_batches(chunks: Iterable[tuple[int, bytes]]) -> list[Batch]:
    out: list[Batch] = []
    for _base, data in sorted(chunks, key=lambda c: c[0]):
        out.extend(iter_batches(data))
    return out


def _local_layout(root: str) -> dict[tuple[str, int], dict[str, list[str]]]:
    """(topic, partition) -> replica -> segment file paths."""
    layout: dict[tuple[str, int], dict[str, list[str]]] = {}
    for replica in sorted(os.listdir(root)):
        rdir = os.path.join(root, replica)
        if not os.path.isdir(rdir):
            continue
        for pdir in os.listdir(rdir):
            m = _PARTITION_DIR.match(pdir)
            if not m or m.group("topic").startswith("__"):
                continue  # internal topics and "-delete"/"-future" directories
            files = [os.path.join(rdir, pdir, f) for f in os.listdir(os.path.join(rdir, pdir))
                     if _SEGMENT.match(f)]
            key = (m.group("topic"), int(m.group("partition")))
            layout.setdefault(key, {})[replica] = files
    return layout


def _merge(res: DivergenceResult, n: int, examples: list[dict[str, Any]],
           compared: int, max_examples: int) -> None:
    res.count += n
    res.offsets_compared += compared
    res.partitions += 1
    room = max_examples - len(res.examples)
    res.examples.extend(examples[:room])


def check_divergence(run: RunDir, spark: SparkSession | None,
                     max_examples: int = 32) -> DivergenceResult:
    """Compare every partition's replicas found under ``logs/data``."""
    root = run.local_path(LOG_DATA)
    if root is not None:
        if not os.path.isdir(root):
            return DivergenceResult(False, note="logs/data absent: replicas not compared")
        layout = _local_layout(root)
        res = DivergenceResult(True, replicas=sorted(
            d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))))
        for (topic, part), reps in sorted(layout.items()):
            batches = {}
            for replica, files in reps.items():
                chunks = []
                for f in files:
                    with open(f, "rb") as fh:
                        chunks.append((int(_SEGMENT.match(os.path.basename(f)).group(1)),  # type: ignore[union-attr]
                                       fh.read()))
                batches[replica] = _segment_batches(chunks)
            res.copies[f"{topic}:{part}"] = len(batches)
            if len(batches) < 2:
                res.partitions += 1
                continue
            n, ex, compared = compare_partition(topic, part, batches, max_examples)
            _merge(res, n, ex, compared, max_examples)
        return res
    return _check_uri(run, spark, max_examples)


def _parse_uri_path(path: str) -> tuple[tuple[str, int], str, int] | None:
    parts = path.rstrip("/").split("/")
    if len(parts) < 3:
        return None
    seg, pdir, replica = parts[-1], parts[-2], parts[-3]
    m, s = _PARTITION_DIR.match(pdir), _SEGMENT.match(seg)
    if not m or not s or m.group("topic").startswith("__"):
        return None
    return (m.group("topic"), int(m.group("partition"))), replica, int(s.group(1))


def _compare_group(item: tuple[tuple[str, int], Iterable[tuple[str, int, bytes]]]
                   ) -> list[tuple[str, int, int, list[dict[str, Any]], int]]:
    """(partition key, copies, divergent offsets, examples, offsets compared)."""
    (topic, part), files = item
    by_rep: dict[str, list[tuple[int, bytes]]] = {}
    for replica, base, data in files:
        by_rep.setdefault(replica, []).append((base, data))
    key = f"{topic}:{part}"
    if len(by_rep) < 2:
        return [(key, len(by_rep), 0, [], 0)]
    batches = {r: _segment_batches(c) for r, c in by_rep.items()}
    return [(key, len(by_rep), *compare_partition(topic, part, batches))]


def _check_uri(run: RunDir, spark: SparkSession | None, max_examples: int) -> DivergenceResult:
    """Remote run directories: the comparison runs on the executors, per partition."""
    assert spark is not None
    if not run.exists(LOG_DATA, spark):
        return DivergenceResult(False, note="logs/data absent: replicas not compared")
    files = spark.sparkContext.binaryFiles(run.uri(LOG_DATA) + "/*/*/*.log")
    keyed = files.flatMap(
        lambda kv: [(p[0], (p[1], p[2], kv[1]))] if (p := _parse_uri_path(kv[0])) else []
    )
    res = DivergenceResult(True)
    for key, copies, n, ex, compared in keyed.groupByKey().flatMap(_compare_group).collect():
        res.copies[key] = copies
        _merge(res, n, ex, compared, max_examples)
    return res
