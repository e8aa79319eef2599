"""Literal histories for checker tests: a tiny builder that writes a run directory.

Every table is written in the contract's schema (:mod:`.tables`), events as the workloads emit
them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from contract.events import END, INSTANT, PHASE

from .tables import event, table, write_dataset, write_events, write_single_file

BASE_NS = 1_700_000_000_000_000_000
MS = 1_000_000
S = 1_000_000_000


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
    _in_poll: dict[tuple[str, int], int] = field(default_factory=dict)

    def write(self, producer: int, seq: int, partition: int = 0, outcome: str = "ok",
              offset: int | None = None, at_ms: int | None = None, topic: str | None = None,
              error: str | None = None, txn: str | None = None,
              txn_outcome: str | None = None, complete: bool = True,
              complete_ms: int | None = None) -> History:
        """One produce attempt, invoked at ``at_ms`` and complete 2 ms later (or at
        ``complete_ms``; never with ``complete=False``)."""
        t = BASE_NS + (at_ms if at_ms is not None else len(self.writes)) * MS
        done = BASE_NS + complete_ms * MS if complete_ms is not None else t + 2 * MS
        self.writes.append({
            "op_id": len(self.writes), "producer": producer, "seq": seq,
            "topic": topic or self.topic, "partition": partition, "invoke_ns": t,
            "complete_ns": done if complete else None, "outcome": outcome,
            "offset": offset, "error": error, "txn": txn, "txn_outcome": txn_outcome,
        })
        return self

    def read(self, reader: str, partition: int, offset: int, producer: int | None,
             seq: int | None, poll: int | None = None, mode: str | None = None,
             valid: bool = True, at_ms: int | None = None, topic: str | None = None,
             src: tuple[int, int] | None = None) -> History:
        if poll is None:
            poll = self._polls.get(reader, 0)
            self._polls[reader] = poll + 1
        mode = mode or ("drain" if reader == "drain" else "assign")
        t = BASE_NS + (at_ms if at_ms is not None else 1000 + len(self.reads)) * MS
        # its place in its poll: the order of this history's read() calls, as a recorder
        # numbers a consume()'s records
        index = self._in_poll.get((reader, poll), 0)
        self._in_poll[(reader, poll)] = index + 1
        self.reads.append({
            "reader": reader, "mode": mode, "poll": poll, "read_ns": t,
            "topic": topic or self.topic, "partition": partition, "offset": offset,
            "producer": producer, "seq": seq, "valid": valid,
            "src_producer": src[0] if src else None, "src_seq": src[1] if src else None,
            "poll_index": index,
        })
        return self

    def drain(self, partition: int, offset: int, producer: int | None, seq: int | None,
              **kw: Any) -> History:
        return self.read("drain", partition, offset, producer, seq, **kw)

    def event(self, kind: str, phase: str = INSTANT, at_ms: int = 0,
              targets: list[Any] | None = None, **detail: Any) -> History:
        self.events.append(event(BASE_NS + at_ms * MS, kind, phase, targets or (), **detail))
        return self

    def drain_end(self, complete: bool = True, end_offsets: dict[str, int] | None = None,
                  at_ms: int = 100_000, **detail: Any) -> History:
        """The drain's end event; ``detail`` as the drain writes it beyond the contract
        (``isolation_level``, ``high_watermarks``, ``last_stable_offsets``, ...)."""
        return self.event(PHASE, END, at_ms, name="drain", complete=complete,
                          end_offsets=end_offsets or {}, **detail)

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
        for name, rows in (("writes", self.writes), ("reads", self.reads),
                           ("observations", self.observations)):
            tbl = table(name, rows)
            target = os.path.join(hist, f"{name}.parquet")
            if parts <= 1:
                write_single_file(target, tbl)
            else:
                write_dataset(target, tbl, max(1, -(-len(rows) // parts)), prefix="part-w",
                              compression="snappy")
        write_events(os.path.join(hist, "events.jsonl"), self.events)
        return path
