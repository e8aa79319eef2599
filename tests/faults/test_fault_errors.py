"""A fault whose start fails is a ``fault-error`` event with the reason, never a silent skip
nor a crash of the schedule (issue 11). The failing fault is a stand-in that raises what the
Docker client raises; the nemesis and the event log are the real ones."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, cast

import docker.errors
import pytest

from contract.events import EventLog
from nemesis.faults.base import BaseFault, FaultContext, FaultError
from nemesis.schedule import Nemesis


class _Refused(BaseFault):
    """A fault whose start fails the way a container engine call does."""

    kind = "pause"

    def __init__(self, exc: Exception) -> None:
        super().__init__()
        self.exc = exc
        self.stopped = 0

    def start(self, ctx: FaultContext) -> None:
        self.targets = [2]
        raise self.exc

    def stop(self, ctx: FaultContext) -> None:
        self.stopped += 1


def _nemesis(tmp_path: Path) -> tuple[Nemesis, EventLog]:
    events = EventLog(tmp_path / "history" / "events.jsonl")
    ctx = FaultContext(cluster=cast(Any, None), events=events, rng=random.Random(1))
    return Nemesis(ctx), events


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / "history" / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("exc", [docker.errors.APIError("500 unable to freeze"),
                                 FaultError("t-0 has no leader now")])
def test_failed_start_is_a_fault_error_event(tmp_path: Path, exc: Exception) -> None:
    nem, events = _nemesis(tmp_path)
    fault = _Refused(exc)
    with pytest.raises(FaultError):
        nem.start_fault(fault)
    events.close()
    (ev,) = [e for e in _events(tmp_path) if e["kind"] == "fault-error"]
    assert ev["phase"] == "instant" and ev["targets"] == [2]
    assert ev["detail"]["fault"] == "pause" and str(exc) in ev["detail"]["error"]
    assert nem.active == [] and fault.stopped == 1  # whatever the start did is undone


def test_a_script_whose_fault_fails_ends_without_ending_the_run(tmp_path: Path) -> None:
    nem, events = _nemesis(tmp_path)
    ran_after: list[bool] = []

    def script(n: Nemesis) -> None:
        n.start_fault(_Refused(docker.errors.APIError("404 no such container")))
        ran_after.append(True)

    nem.run_script(script)  # does not raise: the workload, heal and drain go on
    events.close()
    kinds = [e["kind"] for e in _events(tmp_path)]
    assert kinds.count("fault-error") == 1 and not ran_after
    assert any("scenario script stopped" in e for e in nem.errors)


def _wrapped_stop() -> SystemError:
    """What CPython makes of a stop signal's exception raised while C code runs that then
    returns a result anyway ("<class 'list'> returned a result with an exception set"):
    a SystemError whose cause is the handler's SystemExit (seen in a suite, 2026-12-01)."""
    try:
        try:
            raise SystemExit(143)
        except SystemExit as stop:
            raise SystemError("<class 'list'> returned a result with an exception set") \
                from stop
    except SystemError as wrapped:
        return wrapped


def test_a_stop_signal_wrapped_by_c_code_is_no_fault_error(tmp_path: Path) -> None:
    """The run took such a SIGTERM for a fault that failed to start and went on with its
    schedule for minutes; the nemesis raises the signal's exception instead, no event."""
    nem, events = _nemesis(tmp_path)
    fault = _Refused(_wrapped_stop())
    with pytest.raises(SystemExit) as got:
        nem.start_fault(fault)
    assert got.value.code == 143
    events.close()
    assert [e for e in _events(tmp_path) if e["kind"] == "fault-error"] == []
    assert nem.active == [fault]  # heal_all ends it, as after any interrupted start
    nem.heal_all(settle=False)
    assert nem.active == [] and fault.stopped == 1


def test_a_swallowed_stop_signal_ends_the_schedule_at_its_next_wait(tmp_path: Path) -> None:
    """C code may clear a handler's exception altogether: the guard records what it raised,
    and the schedule raises it again at its next wait instead of running to its end. (The
    guard's handler is called as Python calls it; a real signal in a guarded block would
    end this pytest session, as the plugin does for a run a signal stopped.)"""
    import signal
    import time

    from compose.stop_signals import StopSignals

    nem, events = _nemesis(tmp_path)
    guard = StopSignals()
    with pytest.raises(SystemExit):
        guard.handle(signal.SIGTERM, None)  # raised, then swallowed as C code did
    started = time.monotonic()
    with pytest.raises(SystemExit) as got:
        nem.run_random(["pause"], ["random"], 3.0, time.monotonic() + 300)
    assert got.value.code == 128 + signal.SIGTERM
    assert time.monotonic() - started < 1.0  # at its first wait, not after 300 s
    assert nem.active == []  # no fault started
    events.close()


def test_a_stop_raised_before_the_nemesis_existed_is_not_its_own() -> None:
    """Only stops raised after the nemesis began end it: one a finished run (or a test)
    handled earlier in this process does not stop the next run's schedule."""
    import signal

    from compose.stop_signals import StopSignals, lost_stop, stops_raised

    with pytest.raises(KeyboardInterrupt):
        StopSignals().handle(signal.SIGINT, None)
    since = stops_raised()
    assert lost_stop(since) is None
    with pytest.raises(SystemExit):
        StopSignals().handle(signal.SIGTERM, None)
    assert isinstance(lost_stop(since), SystemExit)


class _Held(_Refused):
    """A kind that needs our own cluster (requests held by our proxy)."""

    kind = "hold"


def test_a_kind_our_cluster_alone_allows_is_refused_on_someone_elses(tmp_path: Path) -> None:
    """A script on a cluster kafka-chaos did not start may start only what that cluster
    allows, whatever it asks: the nemesis refuses the rest before touching anything."""
    from compose.remote import ExternalCluster

    events = EventLog(tmp_path / "history" / "events.jsonl")
    nem = Nemesis(FaultContext(cluster=ExternalCluster("b1:9092", []), events=events))
    fault = _Held(FaultError("never reached"))
    with pytest.raises(FaultError, match="hold needs a cluster kafka-chaos starts"):
        nem.start_fault(fault)
    events.close()
    (ev,) = [e for e in _events(tmp_path) if e["kind"] == "fault-error"]
    assert ev["detail"]["fault"] == "hold"
    assert nem.active == [] and fault.stopped == 0 and fault.targets == []  # never started
