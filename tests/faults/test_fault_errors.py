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

from chaos.faults.base import BaseFault, FaultContext, FaultError
from chaos.nemesis import Nemesis
from workloads.history import EventLog


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
