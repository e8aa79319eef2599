"""The call watch (workloads/call_watch.py): a call blocked past its limit is a hung-call
event while it still blocks; its end says how long and whether it returned; a call within
its limit, or one asked to wait for ever, is no event. No cluster: the blocking body is a
sleep, which releases the GIL as a blocked confluent-kafka call does; the real clients are
frozen mid-call in tests/run/test_liveness_run.py."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from tenacity import Retrying, stop_after_delay, wait_fixed

from contract.events import EventLog
from contract.liveness import HUNG_CALL, SLACK_S
from workloads.call_watch import CallSlot, CallWatcher, new_slot, own_timeout


def _hung(path: Path) -> list[dict[str, Any]]:
    return [e for e in (json.loads(line) for line in path.read_text().splitlines())
            if e["kind"] == HUNG_CALL]


def test_a_call_past_its_limit_is_recorded_while_it_blocks(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    slot = CallSlot(new_slot())
    watch = CallWatcher(EventLog(path), {"c0": slot.arr}, bound_s=0.5, interval_s=0.05).start()
    release = threading.Event()

    def blocked() -> None:
        with slot.call("close", None):  # no timeout of its own: the bound, 0.5 s
            release.wait(30)

    t = threading.Thread(target=blocked)
    t.start()
    for attempt in Retrying(stop=stop_after_delay(10), wait=wait_fixed(0.05), reraise=True):
        with attempt:
            assert [e["phase"] for e in _hung(path)] == ["start"]  # it still blocks
    start = _hung(path)[0]["detail"]
    assert (start["client"], start["call"], start["timeout_s"]) == ("c0", "close", None)
    release.set()
    t.join()
    for attempt in Retrying(stop=stop_after_delay(10), wait=wait_fixed(0.05), reraise=True):
        with attempt:
            assert [e["phase"] for e in _hung(path)] == ["start", "end"]
    end = _hung(path)[1]["detail"]
    assert end["returned"] is True and end["blocked_s"] >= 0.5
    # calls within their limit after it: no more events
    for _ in range(5):
        with slot.call("poll", 0.0):
            pass
    watch.stop()
    assert watch.hung == 1 and len(_hung(path)) == 2


def test_a_call_that_never_returns_ends_as_stopped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    arr = new_slot()
    watch = CallWatcher(EventLog(path), {"p0": arr}, bound_s=0.5, interval_s=0.05)
    slot = CallSlot(arr)
    cm = slot.call("purge", None)
    cm.__enter__()  # entered, never left: a client stopped in the call
    started = time.time_ns()
    watch.scan(started + 1_000_000_000)
    watch.stop()
    events = _hung(path)
    assert [e["phase"] for e in events] == ["start", "end"]
    assert events[1]["detail"]["returned"] is False
    assert "rows_written" not in events[0]["detail"]


def test_a_call_entered_with_the_rows_written_says_so_in_its_events(tmp_path: Path) -> None:
    """The producer's word that only its open transaction's rows were unwritten reaches
    the hung call's events through the shared slot (checkers/killed_in_call.py reads it);
    the next call, entered without it, does not carry it over."""
    path = tmp_path / "events.jsonl"  # each call past its limit: 0.1 s + the 5 s slack
    arr = new_slot()
    watch = CallWatcher(EventLog(path), {"p0": arr}, bound_s=0.5, interval_s=0.05)
    slot = CallSlot(arr)
    with slot.call("send_offsets_to_transaction", 0.1, rows_written=True):
        watch.scan(time.time_ns() + 10_000_000_000)
    watch.scan(time.time_ns())  # it returned
    cm = slot.call("commit_transaction", 0.1)
    cm.__enter__()
    watch.scan(time.time_ns() + 10_000_000_000)
    watch.stop()
    events = _hung(path)
    assert [(e["phase"], e["detail"]["call"], e["detail"].get("rows_written")) for e in events] \
        == [("start", "send_offsets_to_transaction", True),
            ("end", "send_offsets_to_transaction", True),
            ("start", "commit_transaction", None), ("end", "commit_transaction", None)]


def test_limits_own_timeout_plus_slack_and_for_ever(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    arr = new_slot()
    watch = CallWatcher(EventLog(path), {"p0": arr}, bound_s=30)
    slot = CallSlot(arr)
    with slot.call("flush", 2.0):
        t0 = int(arr[2])
        watch.scan(t0 + int((2.0 + SLACK_S - 0.1) * 1e9))
        assert _hung(path) == []  # within timeout + slack
        watch.scan(t0 + int((2.0 + SLACK_S + 0.1) * 1e9))
        assert len(_hung(path)) == 1
    with slot.call("poll", own_timeout(-1)):  # asked to wait for ever: not watched
        watch.scan(time.time_ns() + 10**12)
    assert own_timeout(-1) == math.inf and own_timeout(-1, 60.0) == 60.0
    watch.stop()
    assert len([e for e in _hung(path) if e["phase"] == "start"]) == 1


def test_an_in_process_calls_note_joins_its_own_hung_call_only(tmp_path: Path) -> None:
    """The group a recorded producer's send_offsets_to_transaction is for goes into that
    call's hung-call events (the evidence of librdkafka#5456), never into a later call's."""
    path = tmp_path / "events.jsonl"
    slot = CallSlot(new_slot())
    watch = CallWatcher(EventLog(path), {"p4": slot.arr}, notes={"p4": slot})
    with slot.call("send_offsets_to_transaction", 1.0, group="invoicer"):
        watch.scan(time.time_ns() + int((1.0 + SLACK_S + 1) * 1e9))
    with slot.call("commit_transaction", 1.0):  # no note: a later call names no group
        watch.scan(time.time_ns() + int((1.0 + SLACK_S + 1) * 1e9))
    watch.stop()
    events = _hung(path)
    assert [(e["phase"], e["detail"]["call"], e["detail"].get("group")) for e in events] == [
        ("start", "send_offsets_to_transaction", "invoicer"),
        ("end", "send_offsets_to_transaction", "invoicer"),
        ("start", "commit_transaction", None), ("end", "commit_transaction", None)]


def test_a_process_calls_note_joins_that_call_only(tmp_path: Path) -> None:
    """A producer process's offsets group (run option send_offsets) goes into the hung-call
    events of its send_offsets_to_transaction (the run names it: the shared slot carries no
    note), never into another call's."""
    path = tmp_path / "events.jsonl"
    arr = new_slot()
    note = {"group": "kc-txn-0-offsets-1", "transactional_id": "kc-txn-0"}
    watch = CallWatcher(EventLog(path), {"p0": arr},
                        call_notes={"p0": {"send_offsets_to_transaction": note}})
    slot = CallSlot(arr)
    with slot.call("send_offsets_to_transaction", 1.0):
        watch.scan(time.time_ns() + int((1.0 + SLACK_S + 1) * 1e9))
    with slot.call("commit_transaction", 1.0):
        watch.scan(time.time_ns() + int((1.0 + SLACK_S + 1) * 1e9))
    watch.stop()
    starts = [e["detail"] for e in _hung(path) if e["phase"] == "start"]
    assert [(d["call"], d.get("group"), d.get("transactional_id")) for d in starts] == [
        ("send_offsets_to_transaction", "kc-txn-0-offsets-1", "kc-txn-0"),
        ("commit_transaction", None, None)]
