"""Writing a history's tables and events the way the workloads do, on the contract's schemas.

``table(name, columns)`` builds a table of ``history/<name>.parquet`` from columns (arrays or
lists) or rows, cast to :data:`contract.schemas.TABLES` ``[name]``; columns not given are null.
``write_dataset`` writes a Parquet dataset (a directory of complete part files, like the
workloads), ``write_single_file`` one file (older histories), ``write_events`` the events.jsonl.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contract.events import INSTANT, PHASE
from contract.schemas import TABLES


def table(name: str, data: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> pa.Table:
    """The table ``name`` (writes, reads, observations) from columns or rows, in its schema."""
    schema = TABLES[name]
    if isinstance(data, Mapping):
        given = {k: v for k, v in data.items()}
        unknown = set(given) - set(schema.names)
        if unknown:
            raise KeyError(f"{name} has no columns {sorted(unknown)}")
        n = len(next(iter(given.values()))) if given else 0
        arrays = [given[f.name] if f.name in given else pa.nulls(n, f.type) for f in schema]
        columns = [a.cast(f.type) if isinstance(a, (pa.Array, pa.ChunkedArray))
                   else pa.array(a, f.type) for a, f in zip(arrays, schema, strict=True)]
        return pa.Table.from_arrays(columns, schema=schema)
    return pa.Table.from_pylist(list(data), schema=schema)


def write_single_file(path: Path | str, tbl: pa.Table) -> None:
    """One Parquet file (a history written before datasets of part files)."""
    pq.write_table(tbl, path)


def write_dataset(path: Path | str, tbl: pa.Table, rows_per_part: int,
                  prefix: str = "part-0", compression: str = "zstd") -> None:
    """A Parquet dataset as the workloads write it: a directory of complete part files (each
    written under a temporary name and renamed, so a reader never sees a partial one)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    step = max(1, rows_per_part)
    for i, start in enumerate(range(0, max(tbl.num_rows, 1), step)):
        tmp = path / f"{prefix}-{i:06d}.parquet.tmp"
        pq.write_table(tbl.slice(start, step), tmp, compression=compression)
        tmp.rename(path / f"{prefix}-{i:06d}.parquet")


def event(ts_ns: int, kind: str, phase: str = INSTANT, targets: Iterable[Any] = (),
          **detail: Any) -> dict[str, Any]:
    """One events.jsonl record, shaped as ``contract.events.EventLog.emit`` writes it."""
    return {"ts_ns": int(ts_ns), "kind": kind, "phase": phase, "targets": list(targets),
            "detail": detail}


def phase_event(ts_ns: int, name: str, phase: str, **detail: Any) -> dict[str, Any]:
    """A run phase event (``EventLog.phase``): ``detail.name`` says which phase."""
    return event(ts_ns, PHASE, phase, (), name=name, **detail)


def write_events(path: Path | str, events: Iterable[Mapping[str, Any]],
                 torn_tail: str = "") -> None:
    """events.jsonl, one JSON object a line; ``torn_tail`` is a crashed run's partial line."""
    text = "".join(json.dumps(e) + "\n" for e in events) + torn_tail
    Path(path).write_text(text, encoding="utf-8")
