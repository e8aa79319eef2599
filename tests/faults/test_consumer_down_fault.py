"""The consumer-down fault's protocol with a consumer's slot, without a cluster: it asks
for a close (not a stall), the start waits for the consumer's answer (when its close
returned) and records it, and the end lets the consumer start again. The real consumers'
side (librdkafka's and the Java driver's) runs in the stale-committed-offset scenario."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any, cast

from tenacity import Retrying, stop_after_delay, wait_fixed

from contract.events import EventLog
from contract.liveness import DOWN, POLLING, SLOT_FIELDS, STALL, STALLED_NS
from nemesis.faults.base import FaultContext
from nemesis.faults.factory import make_fault
from nemesis.faults.stall import ConsumerDown
from nemesis.schedule import Nemesis
from workloads.call_watch import CallSlot


class _Consumer(threading.Thread):
    """A consumer's side of the slot, as workloads/consumer.py plays it: asked down, it
    closes (at ``closed_ns``) and answers; it never takes a close request for a stall."""

    def __init__(self, arr: list[int], closed_ns: int) -> None:
        super().__init__(daemon=True)
        self.slot = CallSlot(arr)
        self.closed_ns = closed_ns
        self.stalled = False
        self.back_ns = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.stalled |= self.slot.stall_requested()
            if self.slot.down_requested():
                self.slot.stalled(self.closed_ns)
                while self.slot.down_requested():
                    time.sleep(0.005)
                self.back_ns = time.time_ns()
                self.slot.stalled(0)
            time.sleep(0.005)


def test_a_consumer_down_closes_the_consumer_until_it_ends(tmp_path: Path) -> None:
    slots = {"c0": [0] * len(SLOT_FIELDS)}
    consumer = _Consumer(slots["c0"], 333)
    consumer.start()
    ctx = FaultContext(cast(Any, None), EventLog(tmp_path / "events.jsonl"),
                       rng=random.Random(1), consumers=lambda: slots)
    nem = Nemesis(ctx)
    fault = make_fault("consumer-down", "c0")
    assert isinstance(fault, ConsumerDown)
    nem.start_fault(fault)
    assert slots["c0"][STALL] == DOWN and slots["c0"][STALLED_NS] == 333
    nem.end_fault(fault)
    for attempt in Retrying(stop=stop_after_delay(5), wait=wait_fixed(0.01), reraise=True):
        with attempt:
            assert consumer.back_ns
    consumer.halt.set()
    assert slots["c0"][STALL] == POLLING and not consumer.stalled
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    start, end = [e for e in events if e["kind"] == "consumer-down"]
    assert start["phase"] == "start" and start["targets"] == ["c0"]
    assert start["detail"]["stalled_since_ns"] == {"c0": 333}
    assert end["phase"] == "end" and consumer.back_ns > end["ts_ns"]
