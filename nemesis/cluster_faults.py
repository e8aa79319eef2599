"""Faults for a test body: the fault registry's kinds, started and stopped on demand against a
running cluster, every one recorded in the history's event log like a run's nemesis does.

    faults = ClusterFaults(cluster, events)
    with faults.kill("leader", topic="orders", partition=0):
        ...                                   # the leader of orders-0 is down in here
    faults.pause(2)                           # broker 2 frozen until heal() or .stop()
    with faults.random(kinds=["kill", "pause"], interval=4, duration=30):
        ...                                   # random faults in the background
    faults.heal()                             # everything active stops

Nothing here applies a fault itself: faults are built by ``nemesis.faults.factory`` from the
registry (``contract.faults``) and started and stopped by a :class:`nemesis.schedule.Nemesis`,
so the events are exactly a run's (start/end, ``fault-error`` when a start fails).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from compose.cluster import KafkaCluster
from contract.events import EventLog
from contract.faults import FAULTS, RANDOM_FAULT_KINDS
from nemesis.faults import targets as tg
from nemesis.faults.base import Fault, FaultContext
from nemesis.faults.factory import make_fault
from nemesis.schedule import Nemesis

Target = str | int


def target_spec(target: Target, partition: int | None = None) -> str:
    """A target as ``nemesis.faults.targets`` spells it: ``"leader"`` + partition 2 is
    ``leader:2``; a broker id is its number; other specs (``random``, ``followers``,
    ``controller``, ``1,3``) pass through. ValueError for one that can never resolve."""
    if isinstance(target, bool):
        raise ValueError(f"bad fault target {target!r}")
    if isinstance(target, int):
        spec = str(target)
    else:
        spec = str(target).strip()
        if partition is not None and spec in ("leader", "followers", "follower"):
            spec = f"{spec}:{int(partition)}"
    tg.validate(spec)
    return spec


@dataclass
class ActiveFault:
    """A started fault: stop it with ``stop()`` or by leaving its ``with`` block."""

    fault: Fault
    nemesis: Nemesis

    @property
    def kind(self) -> str:
        return self.fault.kind

    @property
    def targets(self) -> list[int]:
        """The node ids it hit (resolved when it started)."""
        return list(getattr(self.fault, "targets", []))

    @property
    def active(self) -> bool:
        return self.fault.active

    def stop(self) -> None:
        """Undoes the fault (idempotent); its end event is written."""
        if self.fault in self.nemesis.active:
            self.nemesis.end_fault(self.fault)

    def __enter__(self) -> ActiveFault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RandomFaults:
    """A random fault schedule running in a background thread (``Nemesis.run_random``)."""

    def __init__(self, nemesis: Nemesis, kinds: list[str], targets: list[str],
                 interval: float, duration: float) -> None:
        self.nemesis = nemesis
        deadline = time.monotonic() + duration
        nemesis.deadline = deadline
        self._thread = threading.Thread(
            target=nemesis.run_random, args=(kinds, targets, interval, deadline),
            name="kafka-chaos-random-faults", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def errors(self) -> list[str]:
        """Faults that could not start or stop (each also an event)."""
        return list(self.nemesis.errors)

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the schedule's duration is over; True when it is."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Ends the schedule now and heals what it has active (idempotent)."""
        self.nemesis.stop.set()
        self._thread.join()
        self.nemesis.heal_all()

    def __enter__(self) -> RandomFaults:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ClusterFaults:
    """Starts faults of the registry's kinds against ``cluster``, recording them in
    ``events``. ``topic`` is the default topic a ``"leader"`` target refers to; ``seed``
    seeds every random choice (targets, shapes, schedules)."""

    def __init__(self, cluster: KafkaCluster, events: EventLog, *, topic: str = "chaos",
                 seed: int = 0) -> None:
        self.cluster = cluster
        self.events = events
        self.topic = topic
        self._rng = random.Random(seed)
        self._nemeses: list[Nemesis] = []
        self._randoms: list[RandomFaults] = []
        self._lock = threading.Lock()

    def offset_groups(self) -> list[str]:
        """The consumer groups whose coordinator each broker fault records at its start
        (none here; a session of recorded clients names those its transactions use)."""
        return []

    def transactional_ids(self) -> list[str]:
        """The transactional ids whose transaction coordinator each broker fault records
        beside :meth:`offset_groups`' (none here)."""
        return []

    def _nemesis(self, topic: str | None) -> Nemesis:
        # One nemesis per fault or schedule: each has its own topic (what "leader" means)
        # and random stream, and heal() reaches all of them.
        ctx = FaultContext(self.cluster, self.events, topic or self.topic,
                           random.Random(self._rng.getrandbits(64)), groups=self.offset_groups,
                           transactional_ids=self.transactional_ids)
        nemesis = Nemesis(ctx)
        with self._lock:
            self._nemeses.append(nemesis)
        return nemesis

    # ------------------------------------------------------------------ one fault
    def fault(self, kind: str, target: Target = "random", *, topic: str | None = None,
              partition: int | None = None, **params: Any) -> ActiveFault:
        """Starts a fault of ``kind`` (a registry name) now and returns it; a fault that
        could not start raises (after its ``fault-error`` event)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault kind {kind!r} (known: {', '.join(FAULTS)})")
        unknown = sorted(set(params) - set(FAULTS[kind].params))
        if unknown:
            raise ValueError(f"fault {kind!r} has no parameter {unknown[0]!r} "
                             f"(parameters: {', '.join(FAULTS[kind].params) or 'none'})")
        fault = make_fault(kind, target_spec(target, partition), params)
        nemesis = self._nemesis(topic)
        nemesis.start_fault(fault)
        return ActiveFault(fault, nemesis)

    def kill(self, target: Target = "random", *, topic: str | None = None,
             partition: int | None = None) -> ActiveFault:
        """kill -9 of the target's broker(s); restarted when the fault stops."""
        return self.fault("kill", target, topic=topic, partition=partition)

    def stop(self, target: Target = "random", *, topic: str | None = None,
             partition: int | None = None) -> ActiveFault:
        """Clean shutdown of the target's broker(s); started again when the fault stops."""
        return self.fault("stop", target, topic=topic, partition=partition)

    def pause(self, target: Target = "random", *, topic: str | None = None,
              partition: int | None = None) -> ActiveFault:
        """Freezes the target's broker(s) (SIGSTOP-like); thawed when the fault stops."""
        return self.fault("pause", target, topic=topic, partition=partition)

    def power_loss(self, target: Target = "random", *, topic: str | None = None,
                   partition: int | None = None) -> ActiveFault:
        """kill -9 plus loss of the unflushed page cache; restarted when the fault stops."""
        return self.fault("power-loss", target, topic=topic, partition=partition)

    def partition(self, target: Target = "random", *, shape: str = "isolate",
                  peer: str | None = None, topic: str | None = None,
                  partition: int | None = None) -> ActiveFault:
        """A network partition of ``shape`` (isolate, halves, ring, bridge, one-way,
        leader-followers, client) centred on the target; healed when the fault stops."""
        params: dict[str, Any] = {"shape": shape}
        if peer is not None:
            params["peer"] = peer
        return self.fault("partition", target, topic=topic, partition=partition, **params)

    def slow(self, target: Target = "random", *, delay_ms: float = 100.0,
             jitter_ms: float = 0.0, loss: float = 0.0, rate_kbit: float | None = None,
             topic: str | None = None, partition: int | None = None) -> ActiveFault:
        """Slow or lossy links of the target's broker(s); healed when the fault stops."""
        params: dict[str, Any] = {"delay_ms": delay_ms, "jitter_ms": jitter_ms, "loss": loss}
        if rate_kbit is not None:
            params["rate_kbit"] = rate_kbit
        return self.fault("slow", target, topic=topic, partition=partition, **params)

    # ------------------------------------------------------------------ schedules
    def random(self, kinds: list[str] | None = None, *, interval: float = 5.0,
               duration: float = 30.0, targets: list[Target] | None = None,
               topic: str | None = None) -> RandomFaults:
        """Random faults in the background for ``duration`` seconds: every ~``interval`` a
        gap, then one fault of ``kinds`` at one of ``targets`` held for the rest (the run
        nemesis's schedule). Use as a context manager or call ``stop()``; heal() stops it."""
        kinds = list(kinds or ["kill", "pause", "partition"])
        bad = [k for k in kinds if k not in RANDOM_FAULT_KINDS]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a random fault kind "
                             f"(one of {', '.join(RANDOM_FAULT_KINDS)})")
        if interval <= 0 or duration <= 0:
            raise ValueError("interval and duration must be > 0")
        specs = [target_spec(t) for t in (targets or ["random"])]
        schedule = RandomFaults(self._nemesis(topic), kinds, specs, interval, duration)
        with self._lock:
            self._randoms.append(schedule)
        return schedule

    # ------------------------------------------------------------------ healing
    @property
    def active(self) -> list[Fault]:
        """Every fault active now, of any call or schedule."""
        with self._lock:
            nemeses = list(self._nemeses)
        return [f for n in nemeses for f in list(n.active)]

    def heal(self) -> list[str]:
        """Stops every random schedule and every active fault, newest first. Returns the
        errors of heals that failed (each also a ``nemesis-error`` event)."""
        with self._lock:
            randoms, nemeses = list(self._randoms), list(self._nemeses)
        for schedule in randoms:
            schedule.nemesis.stop.set()
        for schedule in randoms:
            schedule.stop()
        errors: list[str] = []
        for nemesis in reversed(nemeses):
            before = len(nemesis.errors)
            nemesis.heal_all()
            errors += nemesis.errors[before:]
        return errors
