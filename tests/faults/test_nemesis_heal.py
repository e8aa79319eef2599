"""How the nemesis heals (no cluster: faults of this test's own, which touch nothing).

An interrupted or failed fault end must leave the fault for ``heal_all`` to undo; healing a
cluster that is removed next must not wait for restarted brokers (a Ctrl-C'd run then took
over a minute to stop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.events import EventLog
from nemesis.faults.base import BaseFault, FaultContext
from nemesis.schedule import Nemesis


class _Flaky(BaseFault):
    """Its first ``failures`` stops raise ``error`` before undoing anything."""

    kind = "flaky"

    def __init__(self, failures: int, error: BaseException) -> None:
        super().__init__()
        self.failures, self.error = failures, error
        self.undone = 0
        self.settled: list[bool] = []

    def start(self, ctx: FaultContext) -> None:
        self._started(ctx)

    def stop(self, ctx: FaultContext) -> None:
        if not self._active:
            return
        if self.failures:
            self.failures -= 1
            raise self.error
        self.undone += 1
        self.settled.append(ctx.settle)
        self._ended(ctx)


def _nemesis(tmp_path: Path) -> Nemesis:
    cluster: Any = None  # these faults never touch it
    return Nemesis(FaultContext(cluster, EventLog(tmp_path / "events.jsonl")))


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(143), RuntimeError("x")])
def test_an_interrupted_end_leaves_the_fault_for_heal(tmp_path: Path,
                                                      error: BaseException) -> None:
    nem = _nemesis(tmp_path)
    fault = _Flaky(1, error)
    nem.start_fault(fault)
    with pytest.raises(type(error)):
        nem.end_fault(fault)
    assert nem.active == [fault] and fault.active and fault.undone == 0
    nem.heal_all()
    assert nem.active == [] and not fault.active and fault.undone == 1


def test_heal_without_settling_tells_the_faults_and_restores(tmp_path: Path) -> None:
    nem = _nemesis(tmp_path)
    first, second = _Flaky(0, RuntimeError()), _Flaky(0, RuntimeError())
    nem.start_fault(first)
    nem.start_fault(second)
    nem.heal_all(settle=False)
    assert (first.settled, second.settled) == ([False], [False])
    assert nem.ctx.settle  # later heals (and the schedule) wait again
    third = _Flaky(0, RuntimeError())
    nem.start_fault(third)
    nem.heal_all()
    assert third.settled == [True]


def test_a_fault_that_never_heals_is_dropped_and_noted(tmp_path: Path) -> None:
    nem = _nemesis(tmp_path)
    stuck = _Flaky(5, RuntimeError("engine gone"))
    nem.start_fault(stuck)
    nem.heal_all()  # does not loop forever; the failure is a nemesis-error event
    assert nem.active == [] and any("engine gone" in e for e in nem.errors)
