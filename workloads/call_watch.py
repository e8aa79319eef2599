"""Watched client calls and client progress, shared between a client process and the run.

Each producer and consumer process gets one small shared array (``new_slot``, the layout
is contract.liveness's). The client marks every watched confluent-kafka call in it while
the call runs (:class:`CallSlot`), and stamps its progress (an acknowledgement, a record
read). The run's :class:`CallWatcher` thread reads every slot: a call blocked past its
limit becomes a ``hung-call`` event while it still blocks (so a client that never returns,
or one stopped by a signal, is recorded too), and the liveness phase waits on the progress
stamps. Nothing is locked: a client SIGKILLed or SIGSTOPped mid-call leaves nothing held.
"""

from __future__ import annotations

import logging
import math
import multiprocessing as mp
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.events import END, START, EventLog
from contract.liveness import (
    CALL,
    CALL_CODES,
    DEFAULT_BOUND_S,
    DOWN,
    GEN,
    HUNG_CALL,
    PROGRESS_NS,
    ROWS_WRITTEN,
    SLOT_FIELDS,
    STALL,
    STALLED,
    STALLED_NS,
    START_NS,
    TIMEOUT_MS,
    CallInProgress,
    read_slot,
)

log = logging.getLogger("kafka_chaos.workloads.call_watch")

_CTX = mp.get_context("spawn")
WATCH_INTERVAL_S = 0.25


def new_slot() -> Any:
    """A slot array for one client process (create it before starting the process)."""
    return _CTX.RawArray("q", len(SLOT_FIELDS))


class CallSlot:
    """The client's side of a slot (None: nothing is watched, as in tests and benches)."""

    def __init__(self, arr: Any = None) -> None:
        self.arr = arr
        # what an in-process watcher adds to a hung call's event: (gen of the call, detail)
        self._note: tuple[int, dict[str, Any]] = (-1, {})

    @contextmanager
    def call(self, name: str, timeout_s: float | None, *, rows_written: bool = False,
             **note: Any) -> Iterator[None]:
        """Marks ``name`` in progress for the duration of the block. ``timeout_s`` is the
        call's own timeout: None for a call that has none (judged against the bound),
        infinity for one asked to wait for ever (not watched). ``rows_written``: the
        producer wrote every row it could just before (only its open transaction's are
        left), which its hung-call events say. ``note`` (in-process clients only: it is not
        in the shared slot) goes into the call's hung-call events."""
        began = self.begin(name, timeout_s, rows_written)
        if began and note:
            self._note = (int(self.arr[GEN]), dict(note))
        try:
            yield
        finally:
            if began:
                self.end()

    def begin(self, name: str, timeout_s: float | None, rows_written: bool = False) -> bool:
        """Marks ``name`` in progress (as :meth:`call`) until :meth:`end`; False when it is
        not watched (no slot, or a call asked to wait for ever)."""
        arr = self.arr
        if arr is None or timeout_s == math.inf:
            return False
        if arr[GEN] % 2:  # a call still marked (a driver's line lost): it ended
            arr[GEN] += 1
        arr[CALL] = CALL_CODES[name]
        arr[START_NS] = time.time_ns()
        arr[TIMEOUT_MS] = -1 if timeout_s is None else int(max(0.0, timeout_s) * 1000)
        arr[ROWS_WRITTEN] = int(rows_written)
        arr[GEN] += 1  # odd: in progress (after the fields, so a reader sees them whole)
        return True

    def note_of(self, gen: int) -> dict[str, Any]:
        """What :meth:`call` was told about the call of generation ``gen`` ({}: nothing)."""
        at, note = self._note
        return dict(note) if at == gen else {}

    def end(self) -> None:
        """The call :meth:`begin` marked has ended."""
        if self.arr is not None and self.arr[GEN] % 2:
            self.arr[GEN] += 1

    def progress(self, at_ns: int | None = None) -> None:
        """The client made progress at ``at_ns`` (None: now): an acknowledgement, a read."""
        if self.arr is not None:
            self.arr[PROGRESS_NS] = at_ns if at_ns is not None else time.time_ns()

    def stall_requested(self) -> bool:
        """Whether the run asks this consumer's poll loop to stop (a poll-stall fault)."""
        return self.arr is not None and int(self.arr[STALL]) == STALLED

    def down_requested(self) -> bool:
        """Whether the run asks this consumer to close and stay closed (consumer-down)."""
        return self.arr is not None and int(self.arr[STALL]) == DOWN

    def stalled(self, since_ns: int) -> None:
        """The loop stopped polling for a stall; its last consume() returned at
        ``since_ns`` (0: it polls again)."""
        if self.arr is not None:
            self.arr[STALLED_NS] = since_ns


@dataclass
class _Hung:
    call: CallInProgress
    detail: dict[str, Any]


@dataclass
class CallWatcher:
    """Reads the slots of the run's clients (name -> slot array) and records hung calls.

    ``bound_s`` is the limit of a call without a timeout of its own. ``stop`` ends every
    hung call still open with ``returned: false``."""

    events: EventLog
    slots: dict[str, Any]
    bound_s: float = DEFAULT_BOUND_S
    #: in-process clients: name -> their CallSlot, whose notes join the hung-call events
    notes: dict[str, CallSlot] = field(default_factory=dict)
    #: client processes: name -> call -> what every hung call of that name adds to its
    #: events (a producer's offsets group and transactional id: run option send_offsets)
    call_notes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    interval_s: float = WATCH_INTERVAL_S
    _open: dict[str, _Hung] = field(default_factory=dict)
    _halt: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    hung: int = 0

    def start(self) -> CallWatcher:
        self._thread = threading.Thread(target=self._loop, name="kc-call-watch", daemon=True)
        self._thread.start()
        return self

    def progress_ns(self, name: str) -> int:
        """The client's latest progress (wall clock ns; 0: none yet)."""
        return read_slot(self.slots[name])[1]

    def _loop(self) -> None:
        while not self._halt.wait(self.interval_s):
            try:
                self.scan(time.time_ns())
            except Exception:  # noqa: BLE001 - the watch must not end the run
                log.exception("call watch failed")

    def scan(self, now_ns: int) -> None:
        """One look at every slot: opens a hung call past its limit, ends one that returned."""
        for name, arr in self.slots.items():
            call, _ = read_slot(arr)
            open_ = self._open.get(name)
            if open_ is not None and (call is None or call.gen != open_.call.gen):
                self._end(name, now_ns, returned=True)
                open_ = None
            if call is None or open_ is not None:
                continue
            if (now_ns - call.start_ns) / 1e9 > call.limit_s(self.bound_s):
                detail = {"client": name, "call": call.call, "timeout_s": call.timeout_s,
                          "since_ns": call.start_ns,
                          **({"rows_written": True} if call.rows_written else {})}
                if name in self.notes:
                    detail |= self.notes[name].note_of(call.gen)
                detail |= self.call_notes.get(name, {}).get(call.call, {})
                self.events.emit(HUNG_CALL, START, [], detail)
                self._open[name] = _Hung(call, detail)
                self.hung += 1
                log.warning("client %s: %s blocked %.1fs (timeout %s)", name, call.call,
                            (now_ns - call.start_ns) / 1e9, call.timeout_s)

    def _end(self, name: str, now_ns: int, returned: bool) -> None:
        h = self._open.pop(name)
        self.events.emit(HUNG_CALL, END, [], {
            **h.detail, "blocked_s": round((now_ns - h.call.start_ns) / 1e9, 3),
            "returned": returned})

    def stop(self) -> None:
        """Stops watching (after the clients were stopped): one last look, then every hung
        call still open ends as not returned."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(5)
        now = time.time_ns()
        self.scan(now)
        for name in list(self._open):
            self._end(name, now, returned=False)


def own_timeout(timeout: float | None, forever: float = math.inf) -> float:
    """A confluent-kafka timeout argument as a watched call's own timeout. -1 (None) asks
    to wait for ever: ``forever`` (infinity: not watched; a transaction call gives its
    transaction timeout, which bounds what librdkafka's -1 waits)."""
    return forever if timeout is None or timeout < 0 else float(timeout)


class InProcessWatch:
    """A watched client in this process (the recorded clients of workloads.recording):
    its slot and a watcher thread writing hung calls to the run's events.jsonl. A blocked
    confluent-kafka call releases the GIL, so the thread sees it while it blocks."""

    def __init__(self, events_path: Path, client: str) -> None:
        self.log = EventLog(events_path)
        self.slot = CallSlot([0] * len(SLOT_FIELDS))
        self.watcher = CallWatcher(self.log, {client: self.slot.arr},
                                   notes={client: self.slot}).start()

    def close(self) -> None:
        self.watcher.stop()
        self.log.close()
