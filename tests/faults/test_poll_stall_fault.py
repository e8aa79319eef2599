"""The poll-stall fault's protocol with a consumer's slot, without a cluster: the start
waits for the consumer's answer and records it, the end event is written before the loop is
let go, a consumer that never answers is a fault error with nothing left requested. The
real consumer's side is tests/workloads/test_poll_stall_cluster.py."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from contract.events import EventLog
from contract.liveness import SLOT_FIELDS, STALL, STALLED_NS
from nemesis.faults.base import FaultContext, FaultError
from nemesis.faults.stall import PollStall, validate
from nemesis.schedule import Nemesis
from workloads.call_watch import CallSlot


def _ctx(tmp_path: Path, slots: dict[str, Any]) -> FaultContext:
    return FaultContext(cast(Any, None), EventLog(tmp_path / "events.jsonl"),
                        rng=random.Random(1), consumers=lambda: slots)


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


class _Loop(threading.Thread):
    """A consumer loop's side of the slot, as workloads/consumer.py plays it: it stops when
    asked (its last consume() having returned at ``last_poll_ns``) and records when it saw
    the request end (its sleeps pace a loop that reads shared memory, as the consumer's)."""

    def __init__(self, arr: list[int], last_poll_ns: int) -> None:
        super().__init__(daemon=True)
        self.slot = CallSlot(arr)
        self.last_poll_ns = last_poll_ns
        self.resumed_ns = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            if self.slot.stall_requested():
                self.slot.stalled(self.last_poll_ns)
                while self.slot.stall_requested():
                    time.sleep(0.005)
                self.resumed_ns = time.time_ns()
                self.slot.stalled(0)
            time.sleep(0.005)


def test_a_stall_records_each_consumer_s_last_poll_and_ends_before_it_resumes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    slots = {"c0": [0] * len(SLOT_FIELDS), "c1": [0] * len(SLOT_FIELDS)}
    loops = [_Loop(slots["c0"], 111), _Loop(slots["c1"], 222)]
    for loop in loops:
        loop.start()
    nem = Nemesis(_ctx(tmp_path, slots))
    fault = PollStall("all")
    nem.start_fault(fault)
    assert slots["c0"][STALL] == 1 and slots["c0"][STALLED_NS] == 111
    nem.end_fault(fault)
    for attempt in Retrying(stop=stop_after_delay(5), wait=wait_fixed(0.01), reraise=True):
        with attempt:
            assert all(loop.resumed_ns for loop in loops)
    for loop in loops:
        loop.halt.set()
    start, end = [e for e in _events(tmp_path) if e["kind"] == "poll-stall"]
    assert start["phase"] == "start" and start["targets"] == ["c0", "c1"]
    assert start["detail"]["stalled_since_ns"] == {"c0": 111, "c1": 222}
    assert end["phase"] == "end" and end["detail"]["consumers"] == ["c0", "c1"]
    # no loop polled before the end event was written: the window bounds the stall
    assert all(loop.resumed_ns > end["ts_ns"] for loop in loops)
    assert slots["c0"][STALL] == 0


def test_a_consumer_that_never_stops_is_a_fault_error(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import nemesis.faults.stall as stall

    monkeypatch.setattr(stall, "STOP_WITHIN_S", 0.3)
    slots = {"c0": [0] * len(SLOT_FIELDS)}  # nobody reads it: a client that cannot stall
    nem = Nemesis(_ctx(tmp_path, slots))
    fault = PollStall("c0")
    with pytest.raises(FaultError, match="c0 did not stop polling"):
        fault.start(nem.ctx)
    assert slots["c0"][STALL] == 0  # the request is withdrawn
    assert not fault.active
    with pytest.raises(FaultError, match="not a group consumer"):
        PollStall("c7").start(nem.ctx)
    with pytest.raises(FaultError, match="no group consumer"):
        PollStall("all").start(_ctx(tmp_path, {}))


def test_targets_name_consumers() -> None:
    for ok in ("all", "random", "c0", "c0,c3"):
        validate(ok)
    for bad in ("leader", "1,2", "c", "consumer"):
        with pytest.raises(ValueError):
            validate(bad)
