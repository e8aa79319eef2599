"""Writers of the run's history, crash-safe by construction.

Parquet tables are written as datasets: a directory (``writes.parquet/``) of complete part
files, one per flushed chunk, each written to a temporary name and renamed. A process killed
at any moment leaves every earlier chunk readable. Events (JSON lines, flushed per line) are
written by :class:`contract.events.EventLog`, beside their reader.
"""

from __future__ import annotations

import errno
import logging
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contract.atomic_files import atomic_output

log = logging.getLogger("kafka_chaos.workloads.history")


def now_ns() -> int:
    return time.time_ns()


class HistoryNotWritten(OSError):
    """Rows that could not be written before the writer closed (the disk stayed full)."""


class ChunkedParquetWriter:
    """Buffers rows and writes them as part files of a Parquet dataset directory.

    ``writer`` names this writer's part files, so several processes may write into one
    dataset. Not thread-safe; give each thread its own writer. A part that cannot be written
    (the disk full) is kept, whole, and written before the next one when space returns; at
    :meth:`close` a part still unwritten raises :class:`HistoryNotWritten` (one line).
    """

    def __init__(self, dataset_dir: Path, schema: pa.Schema, writer: str,
                 chunk_rows: int = 50_000, flush_interval_s: float = 2.0,
                 constants: dict[str, Any] | None = None) -> None:
        self.dir = Path(dataset_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self.writer = writer
        self.chunk_rows = chunk_rows
        self.flush_interval_s = flush_interval_s
        # Columns with one value for every row of this writer (e.g. the producer id): they
        # are left out of the rows and filled in at flush time without per-row conversion.
        self.constants = dict(constants or {})
        self._names = [f.name for f in schema if f.name not in self.constants]
        # Dictionary-encode only the string columns: on the int64 columns (offsets, times)
        # it costs half of the write time and zstd compresses them about as well without.
        self._dict_columns = [f.name for f in schema if pa.types.is_string(f.type)]
        # Rows are kept as tuples (one list append per row) and turned into columns at
        # flush time in C (zip): the per-row cost matters at producer speed.
        self._rows: list[tuple[Any, ...] | list[Any]] = []
        # Continue after this writer's existing parts (a second drain, a restarted reader):
        # never overwrite history.
        self._part = sum(1 for _ in self.dir.glob(f"part-{writer}-*.parquet"))
        self._last_flush = time.monotonic()
        self.rows_written = 0
        self._unwritten: list[pa.Table] = []  # parts whose write failed, in order
        self._full = False  # the last write failed for want of space (logged once)

    def append(self, row: dict[str, Any]) -> None:
        self.append_values([row.get(n) for n in self._names])

    def append_values(self, values: tuple[Any, ...] | list[Any]) -> None:
        """Appends one row given as values in schema order (cheaper than a dict per row),
        leaving out the ``constants`` columns.

        The row is kept by reference until the next flush: do not change it afterwards.
        """
        rows = self._rows
        rows.append(values)
        if len(rows) >= self.chunk_rows or (
                time.monotonic() - self._last_flush >= self.flush_interval_s):
            self.flush()

    @property
    def buffered(self) -> int:
        """Rows appended but not yet in a part file."""
        return len(self._rows) + sum(t.num_rows for t in self._unwritten)

    def flush_due(self) -> bool:
        """The flush interval has passed since the last part file (or attempt to write one)."""
        return time.monotonic() - self._last_flush >= self.flush_interval_s

    def maybe_flush(self) -> None:
        """Flushes when the interval has passed, even if no row came (call from idle loops)."""
        if (self._rows or self._unwritten) and self.flush_due():
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._rows:
            if self._unwritten:
                self.write_table(None)
            return
        rows, self._rows = self._rows, []
        cols = dict(zip(self._names, zip(*rows, strict=True), strict=True))
        arrays = []
        for f in self.schema:
            if f.name in self.constants:
                arrays.append(pa.repeat(pa.scalar(self.constants[f.name], f.type), len(rows)))
            else:
                arrays.append(pa.array(cols[f.name], type=f.type))
        self.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def write_table(self, table: pa.Table | None) -> None:
        """Writes a table built elsewhere (with every column of the schema) as the next part
        file, atomically, after any part kept from a failed write (None: only those). A
        write that fails for want of space keeps the table (logged once per failure run)."""
        self._last_flush = time.monotonic()
        if table is not None:
            self._unwritten.append(table)
        while self._unwritten:
            part = self._unwritten[0]
            name = f"part-{self.writer}-{self._part:06d}.parquet"
            try:
                with atomic_output(self.dir / name) as fh:
                    pq.write_table(part, fh, compression="zstd",
                                   use_dictionary=self._dict_columns)
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                if not self._full:
                    log.error("%s: disk full: %d rows kept until there is space again",
                              self.dir, self.buffered)
                self._full = True
                return
            self._unwritten.pop(0)
            self._full = False
            self._part += 1
            self.rows_written += part.num_rows

    def close(self) -> None:
        self.flush()
        if self._unwritten:
            raise HistoryNotWritten(f"history not written: the disk under {self.dir} is full "
                                    f"({self.buffered} rows of {self.writer} lost)")


def history_dir(run_dir: Path) -> Path:
    d = Path(run_dir) / "history"
    d.mkdir(parents=True, exist_ok=True)
    return d
