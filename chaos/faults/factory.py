"""Building a fault from its kind name (contract.faults), a target spec and explicit parameters.

Shared by the random nemesis (which draws the parameters), scripted scenarios and TOML steps
(which state them), so every path builds faults the same way. The kinds, their parameters and
their windows are the registry's (``contract.faults.FAULTS``); this module only maps each kind
to the class that applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.faults.base import Fault
from chaos.faults.network import Partition, Slow
from chaos.faults.power import PowerLoss
from chaos.faults.process import Kill, Pause, Stop
from chaos.faults.quorum import VoterPartition
from contract.faults import FAULTS


def _partition(target: str, params: dict[str, Any]) -> Fault:
    return Partition(str(params.get("shape", "isolate")), target, params.get("peer"))


def _slow(target: str, params: dict[str, Any]) -> Fault:
    return Slow(target, delay_ms=float(params.get("delay_ms", 100.0)),
                jitter_ms=float(params.get("jitter_ms", 0.0)),
                loss=float(params.get("loss", 0.0)),
                rate_kbit=(float(params["rate_kbit"]) if params.get("rate_kbit") else None))


#: kind -> how to build it from a target spec and the registry's parameters.
BUILDERS: dict[str, Callable[[str, dict[str, Any]], Fault]] = {
    "kill": lambda target, _: Kill(target),
    "stop": lambda target, _: Stop(target),
    "pause": lambda target, _: Pause(target),
    "power-loss": lambda target, _: PowerLoss(target),
    "partition": _partition,
    "slow": _slow,
    "voter-partition": lambda _, params: VoterPartition(str(params.get("shape", "voter-minority"))),
}
# Every registered kind can be built, and nothing is built that the registry does not know.
assert set(BUILDERS) == set(FAULTS), sorted(set(BUILDERS) ^ set(FAULTS))


def make_fault(kind: str, target: str, params: dict[str, Any] | None = None) -> Fault:
    """A fault of ``kind`` at ``target`` with the given parameters (defaults otherwise)."""
    builder = BUILDERS.get(kind)
    if builder is None:
        raise ValueError(f"unknown fault {kind!r}")
    return builder(target, params or {})
