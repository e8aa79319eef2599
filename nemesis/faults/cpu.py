"""CPU starvation: a node keeps running, connected, but gets only a sliver of a core.

A gray failure between "up" and "paused": requests are answered late rather than never, so
heartbeats, fetches and ISR membership degrade slowly, the way they do on an overloaded host
or with a GC-bound JVM. Applied from outside through the engine's cgroup CPU quota (CFS), so
it works with any image; the quota is removed again at the end.
"""

from __future__ import annotations

from typing import Any

from nemesis.faults.base import FaultContext, FaultError
from nemesis.faults.process import _NodeFault

#: CFS period the quota is a share of (Docker's default).
CPU_PERIOD_US = 100_000


class CpuThrottle(_NodeFault):
    """Limit the node's containers to ``share`` of one core; ``stop`` lifts the limit."""

    kind = "cpu-throttle"

    def __init__(self, target: str = "random", share: float = 0.05) -> None:
        if not 0.01 <= share <= 1.0:
            raise FaultError(f"cpu-throttle share must be in [0.01, 1], got {share}")
        super().__init__(target)
        self.share = share

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "share": self.share}

    def _start_detail(self) -> dict[str, Any]:
        return {"share": self.share}

    def _apply(self, ctx: FaultContext, nid: int) -> None:
        ctx.cluster.node(nid).container.update(
            cpu_period=CPU_PERIOD_US, cpu_quota=max(1000, int(self.share * CPU_PERIOD_US)))

    def _undo(self, ctx: FaultContext, nid: int) -> None:
        # -1: no quota (the engine's "unlimited"); a stopped container keeps the setting.
        ctx.cluster.node(nid).container.update(cpu_quota=-1)
