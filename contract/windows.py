"""Fault windows: when each fault was in force, from the events (one pairing for everyone).

The checker attributes anomalies to the windows active at a moment, the report shades them on
every plot; both read them from :func:`fault_windows`, so they agree.

Pairing rules (tested on literal event lists in ``tests/contract/test_windows.py``):

1. ``phase`` events are never faults.
2. A ``start`` event opens a window of its kind; an ``end`` event closes the oldest open window
   of the same kind and the same targets (an end that matches no start is ignored: it cannot
   be told which window it ended).
3. Older and synthetic histories record a fault as two instant events: the fault (``kill``,
   ``pause``, ``partition``, …) opens a window that its closing kind (``start``, ``resume``,
   ``heal``; :data:`contract.faults.CLOSERS`) ends. A closing event with targets ends the open
   windows of the kinds it closes whose targets overlap its own; one without targets ends all of
   them. A closing event also ends windows of those kinds opened by a ``start`` event (a
   restart ends a kill however it was recorded).
4. A window never closed has ``end_ns`` None (the report draws it to the end of the run).
5. Windows are ordered by start time, ties in event order.

Every other instant event (a situation, a rebalance, a nemesis error) is a moment, not a window.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .events import END, PHASE, START, Event
from .faults import CLOSERS, FAULTS


@dataclass(frozen=True)
class FaultWindow:
    """A fault's active interval (``end_ns`` None: never ended)."""

    kind: str
    targets: tuple[Any, ...]
    start_ns: int
    end_ns: int | None
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def ended(self) -> bool:
        """Whether an event closed the window."""
        return self.end_ns is not None

    def active_at(self, ts_ns: int) -> bool:
        """Whether the fault was in force at ``ts_ns`` (both ends included)."""
        return self.start_ns <= ts_ns and (self.end_ns is None or ts_ns <= self.end_ns)

    def brief(self) -> dict[str, Any]:
        """A JSON-ready summary (results.json examples' ``faults_at_ack``)."""
        out: dict[str, Any] = {"kind": self.kind, "targets": list(self.targets),
                               "start_ns": self.start_ns, "end_ns": self.end_ns}
        if self.detail:
            out["detail"] = self.detail
        return out


def _overlaps(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return bool({str(t) for t in a} & {str(t) for t in b})


def is_window_event(event: Event) -> bool:
    """Whether the event opens or closes a fault window (else it is a moment or a phase)."""
    if event.kind == PHASE:
        return False
    if event.phase in (START, END):
        return True
    return event.kind in CLOSERS or (event.kind in FAULTS and FAULTS[event.kind].closed_by
                                     is not None)


def fault_windows(events: Iterable[Event]) -> list[FaultWindow]:
    """The fault windows of a history's events (the module docstring gives the rules)."""
    opened: list[tuple[Event, list[int | None]]] = []  # the opening event, [end_ns]
    for e in sorted(events, key=lambda ev: ev.ts_ns):
        if e.kind == PHASE:
            continue
        if e.phase == START:
            opened.append((e, [None]))
        elif e.phase == END:
            match = next((o for o in opened if o[1][0] is None and o[0].kind == e.kind
                          and tuple(map(str, o[0].targets)) == tuple(map(str, e.targets))),
                         None)
            if match is not None:
                match[1][0] = e.ts_ns
        else:
            ends = CLOSERS.get(e.kind, ())
            for o in opened:
                if o[1][0] is None and o[0].kind in ends and (
                        not e.targets or _overlaps(o[0].targets, e.targets)):
                    o[1][0] = e.ts_ns
            spec = FAULTS.get(e.kind)
            if spec is not None and spec.closed_by is not None:
                opened.append((e, [None]))
    windows = [FaultWindow(e.kind, e.targets, e.ts_ns, end[0], e.detail) for e, end in opened]
    windows.sort(key=lambda w: w.start_ns)
    return windows
