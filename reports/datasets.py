"""Reading a run directory's files: JSON documents, the events log and Parquet datasets.

Every history file may be a single Parquet file or a directory of part files (CONVENTIONS.md),
may be absent (a run that crashed early) and may have a torn last line (events.jsonl). The
report must still render in all those cases, so every reader here degrades to "no rows".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from contract.atomic_files import read_regular

#: The most a JSON document (run.json, results.json) or events.jsonl may hold: far above what
#: a run writes (results carry capped examples), far below what would exhaust memory.
MAX_JSON_BYTES = 64 << 20
MAX_EVENTS_BYTES = 512 << 20


def load_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when the file is missing, no regular file of a
    sane size, or not a JSON object."""
    text = read_regular(path, MAX_JSON_BYTES)
    try:
        value = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):  # deeply nested JSON exhausts the parser's stack
        return None
    return value if isinstance(value, dict) else None


def load_events(path: Path) -> list[dict[str, Any]]:
    """The events of ``events.jsonl`` in file order, skipping torn or malformed lines."""
    events: list[dict[str, Any]] = []
    text = read_regular(path, MAX_EVENTS_BYTES)
    if text is None:
        return events
    lines = text.splitlines()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a crash mid-write leaves half a line; the rest of the log is still good
        if isinstance(event, dict) and isinstance(event.get("ts_ns"), int):
            events.append(event)
    return events


def _part_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        # Only complete part files: writers write ``.tmp`` and rename when a chunk is whole.
        return sorted(
            p for p in path.rglob("*.parquet") if p.is_file() and not p.name.startswith(".")
        )
    return []


def dataset(path: Path) -> ds.Dataset | None:
    """A pyarrow dataset over a Parquet file or directory of part files; None when empty."""
    files = [p for p in _part_files(path) if p.stat().st_size > 0]
    if not files:
        return None
    return ds.dataset([str(p) for p in files], format="parquet")


def read_table(
    path: Path,
    columns: list[str],
    filter: ds.Expression | None = None,  # noqa: A002 - pyarrow's own name for it
) -> pa.Table:
    """The named columns of a Parquet dataset (absent columns come back as all-null).

    An absent or empty dataset yields a table with zero rows, so callers need no special case.
    """
    data = dataset(path)
    if data is None:
        return pa.table({c: pa.array([], type=pa.null()) for c in columns})
    present = [c for c in columns if c in data.schema.names]
    table = data.to_table(columns=present, filter=filter)
    for c in columns:
        if c not in present:
            table = table.append_column(c, pa.nulls(table.num_rows))
    return table.select(columns)


def count_rows(path: Path) -> int:
    """How many rows a Parquet dataset holds (from metadata; cheap on big runs)."""
    data = dataset(path)
    return 0 if data is None else data.count_rows()


def column_bounds(path: Path, column: str) -> tuple[int, int] | None:
    """Min and max of an integer column from the Parquet footers' statistics (no data read).

    Used to find a run's time span cheaply; returns None when no footer has statistics.
    """
    import pyarrow.parquet as pq

    lo: int | None = None
    hi: int | None = None
    for f in _part_files(path):
        try:
            meta = pq.ParquetFile(f).metadata
        except (OSError, pa.ArrowInvalid):
            continue  # a part file being written right now; the others still count
        names = meta.schema.names
        if column not in names:
            continue
        idx = names.index(column)
        for g in range(meta.num_row_groups):
            st = meta.row_group(g).column(idx).statistics
            if st is None or not st.has_min_max:
                continue
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
    return None if lo is None or hi is None else (int(lo), int(hi))
