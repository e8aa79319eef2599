"""Literal histories for checker tests: a tiny builder that writes a run directory."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

BASE_NS = 1_700_000_000_000_000_000
MS = 1_000_000
S = 1_000_000_000

WRITES = pa.schema([
    ("op_id", pa.int64()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("topic", pa.string()), ("partition", pa.int32()), ("invoke_ns", pa.int64()),
    ("complete_ns", pa.int64()), ("outcome", pa.string()), ("offset", pa.int64()),
    ("error", pa.string()), ("txn", pa.string()), ("txn_outcome", pa.string()),
])
READS = pa.schema([
    ("reader", pa.string()), ("mode", pa.string()), ("poll", pa.int64()),
    ("read_ns", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("valid", pa.bool_()),
])
OBS = pa.schema([
    ("ts_ns", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()),
    ("leader", pa.int32()), ("isr", pa.list_(pa.int32())), ("replicas", pa.list_(pa.int32())),
    ("leader_epoch", pa.int32()), ("high_watermark", pa.int64()),
    ("log_end_offsets", pa.list_(pa.int64())),
])


@dataclass
class History:
    """A run directory under construction. Times are ms after BASE_NS unless given in ns."""

    topic: str = "t"
    writes: list[dict[str, Any]] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=lambda: {
        "scenario": "test", "cluster": {"brokers": 3},
        "broker_config": {}, "topic_config": {"min.insync.replicas": 2,
                                              "replication.factor": 3},
        "producer_config": {"acks": "all", "enable.idempotence": True},
        "consumer_config": {},
    })
    _polls: dict[str, int] = field(default_factory=dict)

    def write(self, producer: int, seq: int, partition: int = 0, outcome: str = "ok",
              offset: int | None = None, at_ms: int | None = None, topic: str | None = None,
              error: str | None = None, txn: str | None = None,
              txn_outcome: str | None = None, complete: bool = True) -> History:
        t = BASE_NS + (at_ms if at_ms is not None else len(self.writes)) * MS
        self.writes.append({
            "op_id": len(self.writes), "producer": producer, "seq": seq,
            "topic": topic or self.topic, "partition": partition, "invoke_ns": t,
            "complete_ns": t + 2 * MS if complete else None, "outcome": outcome,
            "offset": offset, "error": error, "txn": txn, "txn_outcome": txn_outcome,
        })
        return self

    def read(self, reader: str, partition: int, offset: int, producer: int | None,
             seq: int | None, poll: int | None = None, mode: str | None = None,
             valid: bool = True, at_ms: int | None = None, topic: str | None = None) -> History:
        if poll is None:
            poll = self._polls.get(reader, 0)
            self._polls[reader] = poll + 1
        mode = mode or ("drain" if reader == "drain" else "assign")
        t = BASE_NS + (at_ms if at_ms is not None else 1000 + len(self.reads)) * MS
        self.reads.append({
            "reader": reader, "mode": mode, "poll": poll, "read_ns": t,
            "topic": topic or self.topic, "partition": partition, "offset": offset,
            "producer": producer, "seq": seq, "valid": valid,
        })
        return self

    def drain(self, partition: int, offset: int, producer: int | None, seq: int | None,
              **kw: Any) -> History:
        return self.read("drain", partition, offset, producer, seq, **kw)

    def event(self, kind: str, phase: str = "instant", at_ms: int = 0,
              targets: list[Any] | None = None, **detail: Any) -> History:
        self.events.append({"ts_ns": BASE_NS + at_ms * MS, "kind": kind, "phase": phase,
                            "targets": targets or [], "detail": detail})
        return self

    def drain_end(self, complete: bool = True, end_offsets: dict[str, int] | None = None,
                  at_ms: int = 100_000) -> History:
        return self.event("phase", "end", at_ms, name="drain", complete=complete,
                          end_offsets=end_offsets or {})

    def observe(self, at_ms: int, partition: int, leader: int, isr: list[int],
                epoch: int | None = None, topic: str | None = None) -> History:
        self.observations.append({
            "ts_ns": BASE_NS + at_ms * MS, "topic": topic or self.topic, "partition": partition,
            "leader": leader, "isr": isr, "replicas": [1, 2, 3], "leader_epoch": epoch,
            "high_watermark": None, "log_end_offsets": None,
        })
        return self

    def config(self, section: str, **values: Any) -> History:
        self.run.setdefault(section, {}).update(
            {k.replace("_", "."): v for k, v in values.items()})
        return self

    def save(self, path: str | os.PathLike[str], parts: int = 1) -> str:
        """Write the run directory (tables split into ``parts`` part files when > 1)."""
        path = os.fspath(path)
        hist = os.path.join(path, "history")
        os.makedirs(hist, exist_ok=True)
        with open(os.path.join(path, "run.json"), "w") as fh:
            json.dump(self.run, fh)
        for name, rows, schema in (("writes", self.writes, WRITES), ("reads", self.reads, READS),
                                   ("observations", self.observations, OBS)):
            table = pa.Table.from_pylist(rows, schema=schema)
            if parts <= 1:
                pq.write_table(table, os.path.join(hist, f"{name}.parquet"))
            else:
                d = os.path.join(hist, f"{name}.parquet")
                os.makedirs(d, exist_ok=True)
                step = max(1, -(-len(rows) // parts))
                for i in range(0, max(len(rows), 1), step):
                    pq.write_table(table.slice(i, step),
                                   os.path.join(d, f"part-w-{i:06d}.parquet"))
        with open(os.path.join(hist, "events.jsonl"), "w") as fh:
            for e in self.events:
                fh.write(json.dumps(e) + "\n")
        return path
