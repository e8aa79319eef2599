"""The building blocks of scripted scenarios: conditions polled on the cluster, and a small
step language (start a fault, stop it, wait, wait until a condition holds).

Built-in scenarios in Python call the helpers directly; TOML scenarios are parsed into
:class:`Step` objects by :mod:`scenarios.toml_file` and run by :func:`run_steps`.
Waiting is always *polling a condition* with a bound, never a sleep that hopes the cluster
got there: a loaded machine can take three times as long as an idle one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compose.admin import ClusterError, PartitionState
from nemesis.faults.base import Fault, FaultContext, FaultError
from nemesis.faults.factory import make_fault

log = logging.getLogger("kafka_chaos.scenarios")

Condition = Callable[[FaultContext], bool]

#: How long a restarted node may take to rejoin every ISR on a loaded 2-core machine.
CATCH_UP_S = 60.0


# ---------------------------------------------------------------------- conditions
def _partitions(ctx: FaultContext) -> list[PartitionState]:
    """The topic's partitions now, or [] when the metadata cannot be had (a node is down)."""
    try:
        return ctx.cluster.describe(ctx.topic)
    except Exception:  # noqa: BLE001 - a failed look-up just means "not yet"
        return []


def isr_full(ctx: FaultContext) -> bool:
    """Every partition has a leader and its whole replica set in sync."""
    parts = _partitions(ctx)
    return bool(parts) and all(p.leader >= 0 and set(p.isr) == set(p.replicas) for p in parts)


def preferred_leaders(ctx: FaultContext) -> bool:
    """Every partition is led by its preferred (first-listed) replica."""
    parts = _partitions(ctx)
    return bool(parts) and all(p.replicas and p.leader == p.replicas[0] for p in parts)


def isr_size(partition: int, size: int) -> Condition:
    """Partition ``partition`` has a leader and an ISR of at most ``size`` replicas."""
    def check(ctx: FaultContext) -> bool:
        return any(p.partition == partition and p.leader >= 0 and len(p.isr) <= size
                   for p in _partitions(ctx))
    return check


def has_leader(partition: int) -> Condition:
    def check(ctx: FaultContext) -> bool:
        return any(p.partition == partition and p.leader >= 0 for p in _partitions(ctx))
    return check


def offline(partition: int) -> Condition:
    def check(ctx: FaultContext) -> bool:
        return any(p.partition == partition and p.leader < 0 for p in _partitions(ctx))
    return check


def wait_until(nemesis: Any, cond: Condition, timeout_s: float, what: str,
               every_s: float = 0.5) -> bool:
    """Polls ``cond`` until it holds (True), ``timeout_s`` passes or the run is stopped
    (False). A timeout is recorded as a nemesis note: the run goes on, the report shows it."""
    t0 = time.monotonic()
    end = t0 + timeout_s
    while True:
        if cond(nemesis.ctx):
            log.info("condition %s held after %.1fs", what, time.monotonic() - t0)
            return True
        if time.monotonic() >= end:
            nemesis.note(f"condition {what} did not hold within {timeout_s:.0f}s")
            return False
        if nemesis.wait(min(every_s, end - time.monotonic())):
            return False


# ---------------------------------------------------------------------- the step language
#: condition name -> the parameters it takes (beyond ``timeout``)
CONDITIONS: dict[str, tuple[str, ...]] = {
    "isr-size": ("partition", "size"), "isr-full": (), "preferred-leaders": (),
    "has-leader": ("partition",), "offline": ("partition",),
}
def make_condition(name: str, params: dict[str, Any]) -> Condition:
    if name == "isr-size":
        return isr_size(int(params.get("partition", 0)), int(params["size"]))
    if name == "isr-full":
        return isr_full
    if name == "preferred-leaders":
        return preferred_leaders
    if name == "has-leader":
        return has_leader(int(params.get("partition", 0)))
    if name == "offline":
        return offline(int(params.get("partition", 0)))
    raise ValueError(f"unknown condition {name!r}")


@dataclass
class Step:
    """One validated step. ``action`` is start / stop / wait / wait-until / at (``seconds``
    after the workload began: a schedule replayed as it happened keeps its times however
    long each start and stop took)."""

    action: str
    fault: str = ""
    target: str = "random"
    ref: str = ""  # start: the name (``as``) the fault is known by; stop: the name to stop
    seconds: float = 0.0
    condition: str = ""
    timeout: float = 30.0
    params: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.action == "start":
            return f"start {self.fault} at {self.target}" + (f" as {self.ref}" if self.ref else "")
        if self.action == "stop":
            return f"stop {self.ref}"
        if self.action == "wait":
            return f"wait {self.seconds:g}s"
        if self.action == "at":
            return f"at {self.seconds:g}s"
        return f"wait until {self.condition} {self.params} (<= {self.timeout:g}s)"


def run_steps(nemesis: Any, steps: list[Step]) -> None:
    """Runs ``steps`` in order. A fault that cannot start is noted and its name stays
    unbound (a later ``stop`` of it does nothing); everything left active is healed by the
    orchestrator after the workload."""
    started: dict[str, Fault] = {}
    t0 = getattr(nemesis, "began", None) or time.monotonic()  # the workload's start
    for i, step in enumerate(steps):
        if nemesis.stop.is_set():
            return
        log.info("step %d: %s", i + 1, step.describe())
        if step.action == "start":
            try:
                fault = nemesis.start_fault(make_fault(step.fault, step.target, step.params))
            except (FaultError, ClusterError):
                continue  # start_fault already noted why
            if step.ref:
                started[step.ref] = fault
        elif step.action == "stop":
            fault = started.pop(step.ref, None)
            if fault is not None:
                nemesis.end_fault(fault)
        elif step.action == "wait":
            nemesis.wait(step.seconds)
        elif step.action == "at":
            nemesis.wait(t0 + step.seconds - time.monotonic())
        elif step.action == "wait-until":
            wait_until(nemesis, make_condition(step.condition, step.params), step.timeout,
                       f"{step.condition} {step.params}".strip())
