"""Fault windows, run phases and the run's time span, from ``history/events.jsonl``.

Every plot of a report shares one time axis (seconds since the run started) and shades the
same fault windows, so the windows are computed once, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Faults recorded as two instant events rather than a start/end pair: the second one closes the
# window the first opened, on the same targets (or on all targets when it names none).
CLOSING_KIND = {"pause": "resume", "kill": "start", "stop": "start", "partition": "heal"}


@dataclass(frozen=True)
class FaultWindow:
    """One fault, active from ``start_ns`` to ``end_ns`` (the run's end when it never ended)."""

    kind: str
    targets: tuple[str, ...]
    start_ns: int
    end_ns: int
    ended: bool
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def label(self) -> str:
        """``kill n2`` — the fault's kind and targets, short enough for a plot."""
        return f"{self.kind} {','.join(self.targets)}".strip()

    def active_at(self, ts_ns: int) -> bool:
        """Whether the fault was in force at ``ts_ns``."""
        return self.start_ns <= ts_ns <= self.end_ns


@dataclass(frozen=True)
class Phase:
    """A phase of the run (setup, workload, heal, drain, check)."""

    name: str
    start_ns: int
    end_ns: int
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass
class Timeline:
    """The time span of a run, its phases, fault windows and instant events."""

    t0_ns: int
    t1_ns: int
    faults: list[FaultWindow]
    phases: list[Phase]
    instants: list[dict[str, Any]]

    @property
    def duration_s(self) -> float:
        """Seconds between the first and last thing the run recorded."""
        return max(0.0, (self.t1_ns - self.t0_ns) / 1e9)

    def rel_s(self, ts_ns: int) -> float:
        """Seconds since the run started."""
        return (ts_ns - self.t0_ns) / 1e9

    def faults_at(self, ts_ns: int) -> list[FaultWindow]:
        """The fault windows in force at ``ts_ns`` (fault attribution for display)."""
        return [f for f in self.faults if f.active_at(ts_ns)]

    def phase(self, name: str) -> Phase | None:
        """The last phase with this name, if the run recorded one."""
        found = [p for p in self.phases if p.name == name]
        return found[-1] if found else None


def _targets(event: dict[str, Any]) -> tuple[str, ...]:
    raw = event.get("targets") or []
    if not isinstance(raw, list):
        raw = [raw]
    return tuple(str(t) for t in raw)


def build_timeline(
    events: list[dict[str, Any]], data_t0_ns: int | None, data_t1_ns: int | None
) -> Timeline:
    """Pair start/end events per (kind, targets) into windows; phases likewise by name.

    ``data_t0_ns``/``data_t1_ns`` bound the history's own timestamps so that the axis covers
    writes recorded outside any event (or a run with no events at all).
    """
    stamps = [e["ts_ns"] for e in events]
    stamps += [t for t in (data_t0_ns, data_t1_ns) if t is not None]
    t0 = min(stamps) if stamps else 0
    t1 = max(stamps) if stamps else 0

    faults: list[FaultWindow] = []
    phases: list[Phase] = []
    instants: list[dict[str, Any]] = []
    open_faults: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
    open_phases: dict[str, dict[str, Any]] = {}

    def close(start: dict[str, Any], end_ns: int, ended: bool) -> None:
        faults.append(
            FaultWindow(
                kind=str(start.get("kind")),
                targets=_targets(start),
                start_ns=start["ts_ns"],
                end_ns=max(end_ns, start["ts_ns"]),
                ended=ended,
                detail=start.get("detail") or {},
            )
        )

    for e in sorted(events, key=lambda e: e["ts_ns"]):
        kind, phase = str(e.get("kind", "?")), e.get("phase", "instant")
        raw_detail = e.get("detail")
        detail: dict[str, Any] = raw_detail if isinstance(raw_detail, dict) else {}
        if kind == "phase":
            name = str(detail.get("name", "?"))
            if phase == "start":
                open_phases[name] = e
            elif phase == "end":
                start = open_phases.pop(name, None)
                phases.append(
                    Phase(name, start["ts_ns"] if start else t0, e["ts_ns"], {**detail})
                )
            continue
        key = (kind, _targets(e))
        if phase == "start":
            open_faults.setdefault(key, []).append(e)
        elif phase == "end":
            stack = open_faults.get(key)
            if stack:
                close(stack.pop(0), e["ts_ns"], True)
        else:
            if kind not in CLOSING_KIND and kind not in CLOSING_KIND.values():
                instants.append(e)  # e.g. a power-loss: a moment, drawn as a marker
            closers = [k for k, v in CLOSING_KIND.items() if v == kind]
            opened = [
                k for k in open_faults
                if k[0] in closers and open_faults[k] and (not key[1] or k[1] == key[1])
            ]
            for k in opened:
                while open_faults[k]:
                    close(open_faults[k].pop(0), e["ts_ns"], True)
            if kind in CLOSING_KIND:
                # An instant fault opens a window its closing event ends (pause ... resume).
                open_faults.setdefault(key, []).append(e)

    for stack in open_faults.values():
        for start in stack:
            close(start, t1, False)
    for name, start in open_phases.items():
        phases.append(Phase(name, start["ts_ns"], t1, start.get("detail") or {}))
    faults.sort(key=lambda f: (f.start_ns, f.kind))
    phases.sort(key=lambda p: p.start_ns)
    return Timeline(t0, t1, faults, phases, instants)
