"""Turning the checker's anomaly examples into table rows a person can read.

Examples are free-form dicts (the checker names the record, partition, offsets, when it was
acknowledged and the faults active then); we pick the known fields out in a fixed order and keep
the rest as a compact "detail" column, so a new field from the checker still shows up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .offset_map import identity_of
from .timeline import Timeline

#: When an example's write was acknowledged (results.json examples; contract.results).
ACK_KEY = "complete_ns"
RECORD_KEYS = ("producer", "seq", "topic", "partition", "records", "replicas",
               "faults_at_ack", "faults_at_missing", "summary", "reads", "partition_changes",
               "partition_state", "missing_ns", "event_ns", "outcome", "definition")


@dataclass(frozen=True)
class ExampleRow:
    """One example, formatted."""

    record: str
    partition: str
    offsets: str
    when: str
    when_title: str
    faults: str
    faults_source: str  # "checker" or "events" (attributed here from the fault windows)
    detail: str


def _short(rec: Any) -> str:
    if isinstance(rec, dict) and rec.get("digest"):
        return f"digest {str(rec['digest'])[:10]}"
    ident = identity_of(rec)
    if ident is not None:
        return f"p{ident[0]}#{ident[1]}"
    if isinstance(rec, dict) and "producer" in rec:
        return "undecodable"
    return str(rec)


def _fmt_record(ex: dict[str, Any]) -> str:
    ident = identity_of(ex)
    if ident is not None:
        return f"p{ident[0]}#{ident[1]}"
    records = ex.get("records")
    if isinstance(records, list):
        return " ≠ ".join(_short(r) for r in records)
    for key in ("records", "replicas"):
        if isinstance(ex.get(key), dict):
            who = "" if key == "records" else "replica "
            return ", ".join(f"{who}{k}: {_short(v)}" for k, v in ex[key].items())
    return "—"


def _fmt_time(ns: int, tl: Timeline) -> tuple[str, str]:
    utc = datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return f"t+{tl.rel_s(ns):.3f}s", f"{utc} UTC"


def _fault_label(f: Any) -> str:
    if not isinstance(f, dict):
        return str(f)
    targets = f.get("targets") or []
    names = ",".join(map(str, targets)) if isinstance(targets, list) else str(targets)
    return f"{f.get('kind', '?')} {names}".strip()


def format_example(ex: dict[str, Any], tl: Timeline) -> ExampleRow:
    """One example as a table row; faults are attributed from events if the checker did not."""
    topic, part = ex.get("topic"), ex.get("partition")
    partition = "—" if part is None else (f"{topic}:{part}" if topic else str(part))
    offsets = "; ".join(
        f"{k.replace('_', ' ')} {', '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in ex.items() if "offset" in k
    ) or "—"
    ack = ex.get(ACK_KEY) if isinstance(ex.get(ACK_KEY), int) else None
    when, when_title, faults, source = "—", "", "", "checker"
    if ack is not None:
        when, when_title = _fmt_time(ack, tl)
    listed = ex.get("faults_at_ack") if isinstance(ex.get("faults_at_ack"), list) else None
    if listed is not None:
        faults = ", ".join(_fault_label(f) for f in listed) or "none"
        missing = ex.get("faults_at_missing")
        if isinstance(missing, list) and missing and missing != listed:
            faults += "; when it went missing: " + ", ".join(_fault_label(f) for f in missing)
    elif ack is not None:
        numbered = {id(f): i for i, f in enumerate(tl.faults, 1)}
        active = tl.faults_at(ack)
        faults = ", ".join(f"F{numbered[id(f)]} {f.label}" for f in active) or "none"
        source = "events"
    skip = set(RECORD_KEYS) | {ACK_KEY}
    rest = {k: v for k, v in ex.items() if k not in skip and "offset" not in k
            and v not in (None, False, [], {})}
    detail = json.dumps(rest, default=str, separators=(", ", ": ")) if rest else ""
    if isinstance(ex.get("summary"), str):  # the checker's own sentence says it best
        detail = ex["summary"] + (f" · {detail}" if detail else "")
    if isinstance(ex.get("missing_ns"), int):
        detail += f" · went missing at {_fmt_time(int(ex['missing_ns']), tl)[0]}"
    return ExampleRow(_fmt_record(ex), partition, offsets, when, when_title, faults, source,
                      detail[:400])
