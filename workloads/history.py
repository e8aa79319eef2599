"""Writers of the run's history, crash-safe by construction.

Parquet tables are written as datasets: a directory (``writes.parquet/``) of complete part
files, one per flushed chunk, each written to a temporary name and renamed. A process killed
at any moment leaves every earlier chunk readable. Events are JSON lines, flushed per line.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

WRITES_SCHEMA = pa.schema([
    ("op_id", pa.int64()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("invoke_ns", pa.int64()),
    ("complete_ns", pa.int64()),
    ("outcome", pa.string()),
    ("offset", pa.int64()),
    ("error", pa.string()),
    ("txn", pa.string()),
    ("txn_outcome", pa.string()),
])

READS_SCHEMA = pa.schema([
    ("reader", pa.string()),
    ("mode", pa.string()),
    ("poll", pa.int64()),
    ("read_ns", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("valid", pa.bool_()),
])

OBSERVATIONS_SCHEMA = pa.schema([
    ("ts_ns", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("leader", pa.int32()),
    ("isr", pa.list_(pa.int32())),
    ("replicas", pa.list_(pa.int32())),
    ("leader_epoch", pa.int32()),
    ("high_watermark", pa.int64()),
    ("log_end_offsets", pa.list_(pa.int64())),
])


def now_ns() -> int:
    return time.time_ns()


class ChunkedParquetWriter:
    """Buffers rows and writes them as part files of a Parquet dataset directory.

    ``writer`` names this writer's part files, so several processes may write into one
    dataset. Not thread-safe; give each thread its own writer.
    """

    def __init__(self, dataset_dir: Path, schema: pa.Schema, writer: str,
                 chunk_rows: int = 50_000, flush_interval_s: float = 2.0) -> None:
        self.dir = Path(dataset_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self.writer = writer
        self.chunk_rows = chunk_rows
        self.flush_interval_s = flush_interval_s
        self._cols: dict[str, list[Any]] = {f.name: [] for f in schema}
        self._col_lists = list(self._cols.values())
        self._n = 0
        self._part = 0
        self._last_flush = time.monotonic()
        self.rows_written = 0

    def append(self, row: dict[str, Any]) -> None:
        for name, col in self._cols.items():
            col.append(row.get(name))
        self._n += 1
        if self._n >= self.chunk_rows or (
                time.monotonic() - self._last_flush >= self.flush_interval_s):
            self.flush()

    def append_values(self, values: tuple[Any, ...] | list[Any]) -> None:
        """Appends one row given as values in schema order (cheaper than a dict per row)."""
        for col, v in zip(self._col_lists, values, strict=True):
            col.append(v)
        self._n += 1
        if self._n >= self.chunk_rows or (
                time.monotonic() - self._last_flush >= self.flush_interval_s):
            self.flush()

    def maybe_flush(self) -> None:
        """Flushes when the interval has passed, even if no row came (call from idle loops)."""
        if self._n and time.monotonic() - self._last_flush >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._n:
            return
        table = pa.table(self._cols, schema=self.schema)
        name = f"part-{self.writer}-{self._part:06d}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, self.dir / name)
        self._part += 1
        self.rows_written += self._n
        self._cols = {f.name: [] for f in self.schema}
        self._col_lists = list(self._cols.values())
        self._n = 0

    def close(self) -> None:
        self.flush()


class EventLog:
    """Appends events to ``events.jsonl`` (thread-safe; one flushed line per event)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def emit(self, kind: str, phase: str, targets: list[int] | None = None,
             detail: dict[str, Any] | None = None, ts_ns: int | None = None) -> dict[str, Any]:
        """Writes one event; ``phase`` is start, end or instant. Returns the event."""
        ev = {"ts_ns": ts_ns or now_ns(), "kind": kind, "phase": phase,
              "targets": list(targets or []), "detail": detail or {}}
        line = json.dumps(ev, default=str)
        with self._lock:
            if not self._fh.closed:
                self._fh.write(line + "\n")
                self._fh.flush()
        return ev

    def phase(self, name: str, phase: str, **detail: Any) -> dict[str, Any]:
        """A run phase event (setup, workload, heal, drain, check)."""
        return self.emit("phase", phase, [], {"name": name, **detail})

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def history_dir(run_dir: Path) -> Path:
    d = Path(run_dir) / "history"
    d.mkdir(parents=True, exist_ok=True)
    return d
