"""Liveness on a real cluster (issue 46, point 1): a producer and a consumer frozen (SIGSTOP)
in the middle of a client call just before the final heal make no progress in the liveness
phase; the run records both calls as hung while they block, ends the phase after its bound,
lets them go (SIGCONT) and the checker names exactly those two clients stuck, from the
history. The other producer stays live. A run with faults and nobody frozen judges the three
kinds with count 0 (nightly; test_run.py's contract run covers the phase's events)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tenacity import Retrying, stop_after_attempt, stop_after_delay, wait_fixed

from contract.liveness import HUNG_CALL, LIVENESS_PHASE, read_slot
from contract.owners import process_state
from runner.config import RunConfig
from runner.orchestrator import Run

pytestmark = pytest.mark.cluster

BOUND_S = 10.0


def _events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "history" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _phase(run_dir: Path, phase: str) -> dict[str, Any] | None:
    return next((e for e in _events(run_dir) if e["kind"] == "phase"
                 and e["detail"].get("name") == LIVENESS_PHASE and e["phase"] == phase), None)


def _freeze_in_a_call(pid: int, slot: Any) -> str:
    """SIGSTOPs ``pid`` at a moment its slot shows a watched call in progress (resumed and
    tried again otherwise); returns the call."""
    for attempt in Retrying(stop=stop_after_attempt(500), reraise=True):
        with attempt:
            os.kill(pid, signal.SIGSTOP)
            for wait in Retrying(stop=stop_after_delay(5), wait=wait_fixed(0.01), reraise=True):
                with wait:
                    assert process_state(pid) == "T"  # stopped by a signal
            call, _ = read_slot(slot)
            if call is None:
                os.kill(pid, signal.SIGCONT)
            assert call is not None, "stopped between two calls"
            return call.call
    raise AssertionError("unreachable")


class Freezer(threading.Thread):
    """Freezes p0 and c0 three seconds before the workload's deadline (no faults: the heal
    and the liveness phase follow it at once) and thaws them once the phase has ended."""

    def __init__(self, run: Run) -> None:
        super().__init__(daemon=True, name="freezer")
        self.run_ = run
        self.frozen: dict[str, str] = {}
        self.pids: list[int] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        r = self.run_
        try:
            for attempt in Retrying(stop=stop_after_delay(300), wait=wait_fixed(0.05),
                                    reraise=True):
                with attempt:
                    assert r.nemesis is not None and r.consumers is not None
                    assert time.monotonic() >= r.nemesis.deadline - 3
            for group, name in ((r.producers, "p0"), (r.consumers, "c0")):
                assert group is not None
                pid = group.procs[name].pid
                assert pid is not None
                self.frozen[name] = _freeze_in_a_call(pid, group.slots[name])
                self.pids.append(pid)
            for attempt in Retrying(stop=stop_after_delay(BOUND_S + 200), wait=wait_fixed(0.2),
                                    reraise=True):
                with attempt:
                    assert _phase(r.run_dir, "end") is not None
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            self.thaw()

    def thaw(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_frozen_clients_are_stuck_and_their_calls_hung(tmp_path, docker_client):  # type: ignore[no-untyped-def]
    from checkers import check_run

    cfg = RunConfig(scenario="liveness", out=str(tmp_path), duration=15, faults=[],
                    liveness=BOUND_S, rate=100, producers=2, consumers=1, seed=3,
                    check=False, report=False)
    r = Run(cfg, None, progress=print)
    freezer = Freezer(r)
    freezer.start()
    try:
        r.setup()
        r.workload()
        r.heal_and_drain()
    finally:
        freezer.thaw()
        r.teardown()
    freezer.join(30)
    assert freezer.error is None, freezer.error
    assert set(freezer.frozen) == {"p0", "c0"}

    start, end = _phase(r.run_dir, "start"), _phase(r.run_dir, "end")
    assert start is not None and end is not None
    # the run waited out the bound for the two frozen clients; p1 progressed
    assert (end["ts_ns"] - start["ts_ns"]) / 1e9 >= BOUND_S - 0.5
    progressed = end["detail"]["progressed"]
    assert progressed["p0"] is None and progressed["c0"] is None and progressed["p1"]

    hung = [e for e in _events(r.run_dir) if e["kind"] == HUNG_CALL]
    opened = {e["detail"]["client"]: e["detail"] for e in hung if e["phase"] == "start"}
    closed = {e["detail"]["client"]: e["detail"] for e in hung if e["phase"] == "end"}
    assert set(opened) == set(closed) == {"p0", "c0"}, hung
    for name, call in freezer.frozen.items():
        assert opened[name]["call"] == call
        # frozen before the phase and thawed after it: blocked at least the bound
        assert closed[name]["returned"] is True and closed[name]["blocked_s"] >= BOUND_S

    res = check_run(r.run_dir)
    assert "error" not in res, res.get("traceback")
    anomalies = res["anomalies"]
    assert [e["client"] for e in anomalies["stuck-producer"]["examples"]] == ["p0"]
    assert [e["client"] for e in anomalies["stuck-consumer"]["examples"]] == ["c0"]
    assert anomalies["hung-call"]["count"] == 2
    assert {e["client"] for e in anomalies["hung-call"]["examples"]} == {"p0", "c0"}
    assert res["valid"] is False


@pytest.mark.nightly  # a second cluster run; the frozen-clients run above is the suite's
def test_a_run_with_faults_judges_liveness(tmp_path, docker_client):  # type: ignore[no-untyped-def]
    from runner.orchestrator import run

    cfg = RunConfig(scenario="liveness-ok", out=str(tmp_path), duration=20, fault_interval=5,
                    faults=["kill", "pause"], rate=100, seed=5, report=False)
    out = run(cfg, None, progress=print)
    assert out.completed and out.results is not None, out.error
    for kind in ("stuck-producer", "stuck-consumer", "hung-call"):
        entry = out.results["anomalies"][kind]
        assert entry.get("checked") is not False and entry["count"] == 0, (kind, entry)
    end = _phase(out.run_dir, "end")
    assert end is not None and all(end["detail"]["progressed"].values()), end
