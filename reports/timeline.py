"""Fault windows, run phases and the run's time span, from ``history/events.jsonl``.

Every plot of a report shares one time axis (seconds since the run started) and shades the
same fault windows, so the windows are computed once, here, by the contract's pairing
(``contract.windows.fault_windows``, the one the checker attributes anomalies with).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.events import END, INSTANT, PHASE, PRODUCER_EPOCH, START, Event, hung_call_pairs
from contract.liveness import HUNG_CALL
from contract.windows import fault_windows, is_window_event


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
    #: hung client calls (contract.liveness), as windows: kind "hung-call", targets
    #: (client, call); open ones drawn to the run's end
    calls: list[FaultWindow] = field(default_factory=list)

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


def _event(raw: dict[str, Any]) -> Event | None:
    try:
        return Event.from_json(raw)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def build_timeline(
    events: list[dict[str, Any]], data_t0_ns: int | None, data_t1_ns: int | None
) -> Timeline:
    """The contract's fault windows (open ones drawn to the run's end), phases paired by name,
    and the instant events that are not part of a window (drawn as markers).

    ``data_t0_ns``/``data_t1_ns`` bound the history's own timestamps so that the axis covers
    writes recorded outside any event (or a run with no events at all).
    """
    parsed = [(e, ev) for e in events if (ev := _event(e)) is not None]
    parsed.sort(key=lambda pair: pair[1].ts_ns)
    stamps = [ev.ts_ns for _, ev in parsed]
    stamps += [t for t in (data_t0_ns, data_t1_ns) if t is not None]
    t0 = min(stamps) if stamps else 0
    t1 = max(stamps) if stamps else 0

    faults = [
        FaultWindow(kind=w.kind, targets=tuple(str(t) for t in w.targets), start_ns=w.start_ns,
                    end_ns=max(w.end_ns if w.end_ns is not None else t1, w.start_ns),
                    ended=w.ended, detail=w.detail)
        for w in fault_windows(ev for _, ev in parsed)
    ]
    phases: list[Phase] = []
    open_phases: dict[str, Event] = {}
    instants: list[dict[str, Any]] = []
    calls = [_call_window(start, end.ts_ns if end else t1, end is not None)
             for start, end in hung_call_pairs(ev for _, ev in parsed)]
    for raw, ev in parsed:
        if ev.kind == HUNG_CALL:
            continue
        if ev.kind == PHASE:
            name = ev.name or "?"
            if ev.phase == START:
                open_phases[name] = ev
            elif ev.phase == END:
                start = open_phases.pop(name, None)
                phases.append(Phase(name, start.ts_ns if start else t0, ev.ts_ns,
                                    {**ev.detail}))
        elif ev.kind == PRODUCER_EPOCH and not ev.detail.get("bump"):
            continue  # a client's first producer id: not a moment worth a marker
        elif ev.phase == INSTANT and not is_window_event(ev):
            instants.append(raw)  # e.g. a situation or a nemesis error: a moment, a marker
    for name, start in open_phases.items():
        phases.append(Phase(name, start.ts_ns, t1, start.detail))
    faults.sort(key=lambda f: (f.start_ns, f.kind))
    phases.sort(key=lambda p: p.start_ns)
    calls.sort(key=lambda c: c.start_ns)
    return Timeline(t0, t1, faults, phases, instants, calls)


def _call_window(start: Event, end_ns: int, ended: bool) -> FaultWindow:
    """A hung call from the moment it began (``since_ns``) to the run's sight of its end."""
    d = start.detail
    since = d.get("since_ns")
    begin = since if isinstance(since, int) else start.ts_ns
    return FaultWindow(HUNG_CALL, (str(d.get("client")), str(d.get("call"))), begin,
                       max(end_ns, begin), ended, dict(d))
