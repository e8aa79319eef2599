"""Offset maps: who read which record at which offset, around an anomaly.

For each anomalous partition (at most ``MAX_MAPS``), a grid with one column per offset and one
row per witness: the producer's acknowledgements, every reader, and replicas named by
divergence examples. A cell is coloured by the record's identity, so agreement reads as a
vertical stripe of one colour and a divergence or a truncation (offsets reused by other
records) shows as a column of different colours. Cells of the checker's example records are
outlined.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
from markupsafe import Markup

from . import svg
from .datasets import dataset
from .summary import AnomalyRow

MAX_MAPS = 4
MAX_COLUMNS = 64
MAX_ROWS = 12
BEFORE = 6  # offsets shown before the first example's offset, for context

Identity = tuple[int, int]
Hit = tuple[int, str, dict[str, Any]]  # (offset, anomaly kind, example)
_ID = re.compile(r"^p?(\d+)[#:/](\d+)$")


def identity_of(value: Any) -> Identity | None:
    """(producer, seq) from an example record: a dict with both keys or a ``p3#17`` string.

    A replica's record known only by its digest (divergence examples) gets the identity
    ``(-2, hash)``: cells still compare equal exactly when the bytes do.
    """
    if isinstance(value, dict) and value.get("producer") is not None and value.get("seq") \
            is not None:
        return int(value["producer"]), int(value["seq"])
    if isinstance(value, dict) and value.get("digest"):
        return -2, int(zlib.crc32(str(value["digest"]).encode()))
    if isinstance(value, str) and (m := _ID.match(value.strip())):
        return int(m.group(1)), int(m.group(2))
    return None


def example_offsets(example: dict[str, Any]) -> list[int]:
    """Every offset an example mentions (``offset``, ``acked_offset``, ``read_offsets``, …)."""
    out: list[int] = []
    for k, v in example.items():
        if "offset" not in k:
            continue
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
                out.append(x)
    return out


@dataclass
class OffsetMap:
    """The grid for one partition and offset range."""

    topic: str
    partition: int
    lo: int
    hi: int  # exclusive
    kinds: list[str]
    rows: list[tuple[str, dict[int, list[Identity]]]] = field(default_factory=list)
    highlighted: set[Identity] = field(default_factory=set)

    @property
    def disputed(self) -> list[int]:
        """Offsets at which the witnesses name more than one record."""
        out = []
        for o in range(self.lo, self.hi):
            ids = {i for _, cells in self.rows for i in cells.get(o, [])}
            if len(ids) > 1:
                out.append(o)
        return out


# Kinds whose picture an offset map shows best come first when windows compete.
PICTURE_ORDER = ("lost", "divergence", "inconsistent-offset", "offset-mismatch",
                 "failed-visible", "unexpected", "duplicate", "reorder")


def plan_maps(rows: list[AnomalyRow]) -> list[OffsetMap]:
    """Choose partitions and offset windows from the checker's examples.

    Per partition, the window covers as many example offsets as it can; partitions with
    violations come first, at most MAX_MAPS of them.
    """
    found: dict[tuple[str, int], list[Hit]] = {}
    violating: set[tuple[str, int]] = set()
    for r in rows:
        if not r.count or r.kind == "unseen":
            continue
        for ex in r.examples:
            if ex.get("partition") is None:
                continue
            key = (str(ex.get("topic", "")), int(ex["partition"]))
            for o in example_offsets(ex):
                found.setdefault(key, []).append((o, r.kind, ex))
            if r.status == "violation" and example_offsets(ex):
                violating.add(key)
    rank = {k: i for i, k in enumerate(PICTURE_ORDER)}
    maps = []
    for key in sorted(found, key=lambda k: (k not in violating, k)):
        hits = sorted(found[key], key=lambda h: h[0])
        def score(lo: int, hits: list[Hit] = hits) -> tuple[int, int]:
            inside = [h for h in hits if lo <= h[0] < lo + MAX_COLUMNS]
            # The most telling kind in the window first, then how many offsets it explains.
            return (-min(rank.get(h[1], 99) for h in inside), len({h[0] for h in inside}))

        best = max(hits, key=lambda h: (score(max(0, h[0] - BEFORE)), -h[0]))
        lo = max(0, best[0] - BEFORE)
        m = OffsetMap(key[0], key[1], lo, lo + MAX_COLUMNS, [])
        for o, kind, ex in hits:
            if not m.lo <= o < m.hi:
                continue
            if kind not in m.kinds:
                m.kinds.append(kind)
            if (i := identity_of(ex)) is not None:
                m.highlighted.add(i)
            records = ex.get("records") or {}
            for rec in records.values() if isinstance(records, dict) else records:
                if (i := identity_of(rec)) is not None:
                    m.highlighted.add(i)
        maps.append(m)
    return maps[:MAX_MAPS]


def fill_maps(maps: list[OffsetMap], history: Path, rows: list[AnomalyRow]) -> None:
    """Read the acknowledgements and reads that fall in the maps' windows.

    One scan per dataset for all maps (the windows' filters OR-ed together): on a 10M-write run
    each scan costs a second, so one per map would be the slowest part of the report.
    """
    if not maps:
        return
    writes, reads = dataset(history / "writes.parquet"), dataset(history / "reads.parquet")
    per_map_acked: list[dict[int, list[Identity]]] = [{} for _ in maps]
    if writes is not None and {"offset", "outcome", "partition"} <= set(writes.schema.names):
        t = writes.to_table(columns=["topic", "partition", "producer", "seq", "offset"],
                            filter=_any_window(maps, writes) & (ds.field("outcome") == "ok")) \
            if "topic" in writes.schema.names else writes.to_table(
                columns=["partition", "producer", "seq", "offset"],
                filter=_any_window(maps, writes) & (ds.field("outcome") == "ok"))
        for row in t.to_pylist():
            for i, m in enumerate(maps):
                if _inside(m, row):
                    per_map_acked[i].setdefault(row["offset"], []).append(
                        (row["producer"], row["seq"]))
    per_map_reads: list[dict[str, dict[int, list[Identity]]]] = [{} for _ in maps]
    if reads is not None and {"offset", "partition"} <= set(reads.schema.names):
        cols = [c for c in ("topic", "partition", "reader", "producer", "seq", "offset")
                if c in reads.schema.names]
        t = reads.to_table(columns=cols, filter=_any_window(maps, reads))
        t = t.sort_by([("offset", "ascending")])
        for row in t.to_pylist():
            for i, m in enumerate(maps):
                if not _inside(m, row):
                    continue
                p, s = row.get("producer"), row.get("seq")
                ident: Identity = (p if p is not None else -1, s if s is not None else -1)
                cell = per_map_reads[i].setdefault(str(row.get("reader")), {}).setdefault(
                    row["offset"], [])
                if ident not in cell:
                    cell.append(ident)
    for m, ack, by_reader in zip(maps, per_map_acked, per_map_reads, strict=True):
        m.rows.append(("acknowledged", ack))
        # The drain first: it is the reference the other readers are compared with.
        for reader in sorted(by_reader, key=lambda r: (r != "drain", r)):
            m.rows.append((reader, by_reader[reader]))
        _add_replica_rows(m, rows)
        del m.rows[MAX_ROWS:]


def _inside(m: OffsetMap, row: dict[str, Any]) -> bool:
    return (row["partition"] == m.partition and m.lo <= row["offset"] < m.hi
            and (not m.topic or row.get("topic") in (None, m.topic)))


def _add_replica_rows(m: OffsetMap, rows: list[AnomalyRow]) -> None:
    """Rows for replicas named by divergence examples (what each replica's log holds)."""
    for r in rows:
        if r.kind != "divergence":
            continue
        for ex in r.examples:
            if ex.get("partition") != m.partition or not isinstance(ex.get("replicas"), dict):
                continue
            for replica, rec in ex["replicas"].items():
                rid = identity_of(rec)
                off = ex.get("offset")
                if rid and isinstance(off, int) and m.lo <= off < m.hi:
                    label = f"replica {replica}"
                    row = next((c for n, c in m.rows if n == label), None)
                    if row is None:
                        row = {}
                        m.rows.append((label, row))
                    row.setdefault(off, []).append(rid)


def _any_window(maps: list[OffsetMap], data: ds.Dataset) -> ds.Expression:
    expr = _window(maps[0], data)
    for m in maps[1:]:
        expr = expr | _window(m, data)
    return expr


def _window(m: OffsetMap, data: ds.Dataset) -> ds.Expression:
    expr = (ds.field("partition") == m.partition) & (ds.field("offset") >= m.lo) & (
        ds.field("offset") < m.hi)
    if m.topic and "topic" in data.schema.names:
        expr = expr & (ds.field("topic") == m.topic)
    return expr


def _color(i: Identity) -> str:
    if i[0] == -1:
        return "#9ca3af"  # an undecodable record
    hue = (i[0] * 137 + i[1] * 59) % 360  # neighbours differ; one record, one colour
    return f"hsl({hue},62%,{52 + (i[1] % 3) * 8}%)"


def render(m: OffsetMap) -> Markup:
    """The map as SVG: witness rows × offset columns, disputed offsets marked on top."""
    label_w, cell, row_h, top = 110, 15, 20, 34
    cols = m.hi - m.lo
    width = label_w + cols * cell + 10
    height = top + row_h * len(m.rows) + 8
    s = svg.Svg(width, height, f"offset map of {m.topic}:{m.partition}", "plot offset-map")
    disputed = set(m.disputed)
    for c in range(cols):
        o = m.lo + c
        x = label_w + c * cell
        if o in disputed:
            s.add(f'<rect class="disputed" x="{x}" y="{top - 8}" width="{cell - 1}" '
                  f'height="{height - top + 4}"><title>offset {o}: the witnesses disagree'
                  "</title></rect>")
        if c % 5 == 0:
            s.add(f'<text class="tick" x="{x + 1}" y="{top - 12}">{o}</text>')
    for r, (name, cells) in enumerate(m.rows):
        y = top + r * row_h
        s.add(f'<text class="lane-label" x="{label_w - 6}" y="{y + 13}" text-anchor="end">'
              f"{svg.esc(name[:16])}</text>")
        for c in range(cols):
            ids = cells.get(m.lo + c, [])
            x = label_w + c * cell
            if not ids:
                s.add(f'<rect class="cell-empty" x="{x}" y="{y}" width="{cell - 1}" '
                      f'height="{row_h - 4}"/>')
                continue
            h = (row_h - 4) / len(ids)
            for k, i in enumerate(ids):
                cls = "cell ex" if i in m.highlighted else "cell"
                who = "acknowledged" if name == "acknowledged" else f"{name} read"
                what = (f"p{i[0]}#{i[1]}" if i[0] >= 0 else "an undecodable record"
                        if i[0] == -1 else f"a record with digest hash {i[1]:08x}")
                s.add(f'<rect class="{cls}" x="{x}" y="{y + k * h:.1f}" width="{cell - 1}" '
                      f'height="{h:.1f}" fill="{_color(i)}"><title>{svg.esc(who)} {what} at '
                      f"{svg.esc(m.topic)}:{m.partition} offset {m.lo + c}</title></rect>")
    return s.render()
