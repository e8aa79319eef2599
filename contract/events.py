"""The event record of ``history/events.jsonl`` and its kinds (DESIGN.md §3).

One JSON object per line: ``{"ts_ns", "kind", "phase", "targets", "detail"}``. Fault kinds
are listed in :mod:`contract.faults`; the other kinds any stage writes are named here. The
writer (:class:`EventLog`) and the reader (:func:`parse_events`) are both here.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.liveness import HUNG_CALL, LIVENESS_PHASE

#: ``phase`` values: a window opens (start), closes (end), or a moment (instant).
START, END, INSTANT = "start", "end", "instant"

#: A run phase (setup, workload, liveness, heal, drain, check): ``detail.name`` says which
#: (liveness: contract.liveness, inside the workload phase).
PHASE = "phase"
RUN_PHASES: tuple[str, ...] = ("setup", "workload", LIVENESS_PHASE, "heal", "drain", "check")

#: A fault that could not be applied: ``detail = {"fault": kind, "error": "..."}``.
FAULT_ERROR = "fault-error"
#: A copy of the replicas' data (for the divergence check) failed.
COLLECT_ERROR = "collect-error"
#: The random nemesis itself failed (its message in ``detail.message``).
NEMESIS_ERROR = "nemesis-error"
#: A scenario verified the situation it set up (``detail.what``).
SITUATION = "situation"
#: A subscribe-mode consumer's partitions were reassigned.
REBALANCE = "rebalance"
#: The KRaft controller moved; preferred leaders were elected.
CONTROLLER_CHANGE = "controller-change"
PREFERRED_LEADERS = "preferred-leaders"
#: An idempotent producer's (producer id, epoch) changed, seen in its client statistics:
#: ``targets = [producer]``, ``detail = {producer, producer_id, epoch, epoch_cnt, bump,
#: since_ns, prev_producer_id?, prev_epoch?, first_seq?}``. ``bump`` is false for a client's
#: first id; that event's ``first_seq`` is the first seq the client was given (the records from
#: it on, up to the next client's first seq, are that client's).
#: The change happened in ``(since_ns, ts_ns]`` (``since_ns`` null: before ``ts_ns``).
PRODUCER_EPOCH = "producer-epoch"
#: A workload client logged a line that is a known bug's signature
#: (contract.known_bugs.LOG_SIGNATURES): ``detail = {client, bug, line}`` (``client`` p<i> or a
#: reader), at most one a second per client and bug.
CLIENT_LOG = "client-log"
#: A workload consumer's consume() gave (or raised) a fatal error, or said the application
#: exceeded max.poll.interval.ms (``_MAX_POLL_EXCEEDED``); written by the consumer as it
#: happens: ``detail = {client, code, name, fatal, reason, cause, librdkafka}`` (``reason``:
#: librdkafka's text; ``cause``, of a fatal error: the error that text names first, e.g.
#: ``INVALID_REQUEST``, or null), at most one a second per client and code.
CONSUMER_ERROR = "consumer-error"
#: A workload producer's client reported every broker down (librdkafka's
#: ``_ALL_BROKERS_DOWN``, through its error callback), written as it happens:
#: ``detail = {client, name, reason}`` (``client`` p<i>; ``reason``: librdkafka's text, e.g.
#: "3/3 brokers are down"). librdkafka reports it at most once a re-bootstrap.
CLIENT_ERROR = "client-error"
#: The error names a producer records as ``client-error`` events.
RECORDED_CLIENT_ERRORS: tuple[str, ...] = ("_ALL_BROKERS_DOWN",)
#: The run was interrupted (Ctrl-C) or failed.
INTERRUPTED = "interrupted"
RUN_ERROR = "run-error"
#: The consumers' processes were stopped (the orchestrator's teardown, after the drain):
#: ``detail = {"consumers": {reader: {polls, records, ..., exitcode}}}``, as the workload's
#: end event records the producers' (``detail.producers``). An exit code other than 0 (a
#: crash, a signal) means the process's reads may be missing from the history.
CONSUMERS_STOPPED = "consumers-stopped"

#: Every kind other than the faults' own (contract.faults.FAULTS) and their closers.
OTHER_KINDS: tuple[str, ...] = (
    PHASE, FAULT_ERROR, COLLECT_ERROR, NEMESIS_ERROR, SITUATION, REBALANCE, CONTROLLER_CHANGE,
    PREFERRED_LEADERS, PRODUCER_EPOCH, INTERRUPTED, RUN_ERROR, CONSUMERS_STOPPED, HUNG_CALL,
    CONSUMER_ERROR, CLIENT_ERROR,
)


@dataclass(frozen=True)
class Event:
    """One line of events.jsonl."""

    ts_ns: int
    kind: str
    phase: str
    targets: tuple[Any, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        """The phase name for ``kind == "phase"`` events."""
        value = self.detail.get("name")
        return str(value) if value is not None else None

    def brief(self) -> dict[str, Any]:
        """A JSON-ready summary for examples."""
        out: dict[str, Any] = {"kind": self.kind, "phase": self.phase, "ts_ns": self.ts_ns,
                               "targets": list(self.targets)}
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Event:
        """From one parsed line (``targets`` may be a scalar; ``detail`` non-dicts dropped).

        Raises KeyError/TypeError/ValueError for a line without a usable ``ts_ns``.
        """
        targets = obj.get("targets") or []
        if not isinstance(targets, list):
            targets = [targets]
        detail = obj.get("detail")
        return cls(ts_ns=int(obj["ts_ns"]), kind=str(obj.get("kind", "")),
                   phase=str(obj.get("phase", INSTANT)), targets=tuple(targets),
                   detail=detail if isinstance(detail, dict) else {})


def parse_events(text: str | None) -> tuple[list[Event], int]:
    """Events sorted by time, and the number of lines that did not parse (torn last line)."""
    events: list[Event] = []
    bad = 0
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            events.append(Event.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError):
            bad += 1
    events.sort(key=lambda e: e.ts_ns)
    return events, bad


def hung_call_pairs(events: Iterable[Event]) -> list[tuple[Event, Event | None]]:
    """Each hung call's start event with its end event (None: still blocked when the history
    ends), in the order the calls were seen; a start and its end share ``client`` and
    ``since_ns`` (contract.liveness)."""
    pairs: list[tuple[Event, Event | None]] = []
    open_at: dict[tuple[Any, Any], int] = {}
    for e in events:
        if e.kind != HUNG_CALL:
            continue
        key = (e.detail.get("client"), e.detail.get("since_ns"))
        if e.phase == START:
            open_at[key] = len(pairs)
            pairs.append((e, None))
        elif e.phase == END and (i := open_at.pop(key, None)) is not None:
            pairs[i] = (pairs[i][0], e)
    return pairs


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
        ev = {"ts_ns": ts_ns or time.time_ns(), "kind": kind, "phase": phase,
              "targets": list(targets or []), "detail": detail or {}}
        line = json.dumps(ev, default=str)
        with self._lock:
            if not self._fh.closed:
                self._fh.write(line + "\n")
                self._fh.flush()
        return ev

    def phase(self, name: str, phase: str, **detail: Any) -> dict[str, Any]:
        """A run phase event (setup, workload, heal, drain, check)."""
        return self.emit(PHASE, phase, [], {"name": name, **detail})

    def close(self) -> None:
        with self._lock:
            self._fh.close()
