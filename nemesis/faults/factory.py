"""Building a fault from its kind name (contract.faults), a target spec and explicit parameters.

Shared by the random nemesis (which draws the parameters), scripted scenarios and TOML steps
(which state them), so every path builds faults the same way. The kinds, their parameters and
their windows are the registry's (``contract.faults.FAULTS``); this module only maps each kind
to the class that applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contract.faults import FAULTS
from nemesis.faults.base import Fault, FaultContext
from nemesis.faults.cpu import CpuThrottle
from nemesis.faults.hold import Hold
from nemesis.faults.network import Partition, Slow
from nemesis.faults.power import PowerLoss
from nemesis.faults.process import Kill, Pause, Stop
from nemesis.faults.quorum import VOTER_SHAPES, VoterPartition
from nemesis.faults.stall import ConsumerDown, PollStall


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
    "hold": lambda target, params: Hold(target, float(params.get("hold_s", 8.0))),
    "partition": _partition,
    "slow": _slow,
    "cpu-throttle": lambda target, params: CpuThrottle(target, float(params.get("share", 0.05))),
    "voter-partition": lambda target, params: VoterPartition(
        str(params.get("shape", "voter-minority")), target),
    "poll-stall": lambda target, _: PollStall(target),
    "consumer-down": lambda target, _: ConsumerDown(target),
}
# Every registered kind can be built, and nothing is built that the registry does not know.
assert set(BUILDERS) == set(FAULTS), sorted(set(BUILDERS) ^ set(FAULTS))


def _partition_params(ctx: FaultContext) -> dict[str, Any]:
    shapes = ["isolate", "halves", "leader-followers", "one-way", "client"]
    if len(ctx.cluster.brokers) >= 3:
        shapes.append("bridge")
    if len(ctx.cluster.nodes) >= 4:
        shapes.append("ring")
    return {"shape": ctx.rng.choice(shapes)}


#: kind -> how the random nemesis draws its parameters (kinds without one take defaults).
DRAWS: dict[str, Callable[[FaultContext], dict[str, Any]]] = {
    "partition": _partition_params,
    "voter-partition": lambda ctx: {"shape": ctx.rng.choice(VOTER_SHAPES)},
    "cpu-throttle": lambda ctx: {"share": ctx.rng.choice([0.02, 0.05, 0.1])},
    "slow": lambda ctx: {"delay_ms": ctx.rng.choice([50, 100, 250]),
                         "jitter_ms": ctx.rng.choice([0, 10]),
                         "loss": ctx.rng.choice([0.0, 0.0, 0.05])},
}
assert set(DRAWS) <= set(FAULTS)


def draw_params(kind: str, ctx: FaultContext) -> dict[str, Any]:
    """Parameters for a random fault of ``kind``, drawn from ``ctx.rng``."""
    draw = DRAWS.get(kind)
    return draw(ctx) if draw is not None else {}


def make_fault(kind: str, target: str, params: dict[str, Any] | None = None) -> Fault:
    """A fault of ``kind`` at ``target`` with the given parameters (defaults otherwise)."""
    builder = BUILDERS.get(kind)
    if builder is None:
        raise ValueError(f"unknown fault {kind!r}")
    return builder(target, params or {})
