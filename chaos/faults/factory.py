"""Building a fault from its kind name, a target spec and explicit parameters.

Shared by the random nemesis (which draws the parameters) and scripted scenarios (which state
them), so both build faults the same way.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.base import Fault
from chaos.faults.network import Partition, Slow
from chaos.faults.power import PowerLoss
from chaos.faults.process import Kill, Pause, Stop

FAULT_PARAMS: dict[str, tuple[str, ...]] = {
    "kill": (), "stop": (), "pause": (), "power-loss": (), "partition": ("shape", "peer"),
    "slow": ("delay_ms", "jitter_ms", "loss", "rate_kbit"),
}


def make_fault(kind: str, target: str, params: dict[str, Any] | None = None) -> Fault:
    """A fault of ``kind`` at ``target`` with the given parameters (defaults otherwise)."""
    params = params or {}
    if kind == "kill":
        return Kill(target)
    if kind == "stop":
        return Stop(target)
    if kind == "pause":
        return Pause(target)
    if kind == "power-loss":
        return PowerLoss(target)
    if kind == "partition":
        return Partition(str(params.get("shape", "isolate")), target, params.get("peer"))
    if kind == "slow":
        return Slow(target, delay_ms=float(params.get("delay_ms", 100.0)),
                    jitter_ms=float(params.get("jitter_ms", 0.0)),
                    loss=float(params.get("loss", 0.0)),
                    rate_kbit=(float(params["rate_kbit"]) if params.get("rate_kbit") else None))
    raise ValueError(f"unknown fault {kind!r}")
