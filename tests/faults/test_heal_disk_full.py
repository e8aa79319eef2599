"""With the disk full, every event write fails; the heal must still undo every active fault
(issue 47). Before: the first failed write inside heal_all's error path raised out of it and
the older faults stayed active. No cluster: the faults here only record their undo; the
disk is /dev/full, which refuses every write with ENOSPC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.events import EventLog
from nemesis.faults.base import FaultContext
from nemesis.schedule import Nemesis


class _Undoes:
    """A fault whose stop undoes it and then writes its end event (which fails)."""

    kind = "pause"

    def __init__(self) -> None:
        self.undone = False

    def start(self, ctx: FaultContext) -> None:
        pass

    def stop(self, ctx: FaultContext) -> None:
        self.undone = True
        ctx.events.emit(self.kind, "end", [1])

    @property
    def active(self) -> bool:
        return not self.undone

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}


def test_heal_undoes_every_fault_when_no_event_can_be_written() -> None:
    if not Path("/dev/full").exists():
        pytest.fail("/dev/full is needed to fill a disk without filling one")
    events = EventLog(Path("/dev/full"))
    with pytest.raises(OSError):
        events.emit("probe", "instant")  # the disk really refuses
    nem = Nemesis(FaultContext(None, events))  # type: ignore[arg-type]
    faults = [_Undoes(), _Undoes(), _Undoes()]
    nem.active.extend(faults)
    nem.heal_all()
    assert [f.undone for f in faults] == [True, True, True]
    assert nem.active == []
    assert sum("heal of pause failed" in e for e in nem.errors) == 3, nem.errors
    assert sum("could not record it" in e for e in nem.errors) == 3, nem.errors
