"""What a fault is: a small object that starts, stops, and records both as events.

Faults are applied from outside the broker containers (the engine's kill/pause, nsenter into
a container's network namespace), so the same code works with the official apache/kafka
image, which has no iptables or tc inside.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

log = logging.getLogger("kafka_chaos.nemesis.faults")

if TYPE_CHECKING:  # annotations only: the CLI validates its input before loading Docker
    from compose.cluster import KafkaCluster
    from compose.remote import ExternalCluster
    from contract.events import EventLog


@dataclass
class FaultContext:
    """What a fault may touch: the cluster, the event log, the topic, a seeded RNG."""

    cluster: KafkaCluster | ExternalCluster
    events: EventLog
    topic: str = "chaos"
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # False while healing a cluster that is about to be removed: undoing a fault then need
    # not wait for the cluster to serve again (a restarted broker can take a minute).
    settle: bool = True
    #: the consumer groups whose coordinator a broker fault records at its start (a
    #: transactional producer's offsets go to them: contract.known_bugs
    #: ``coordinator_down_in_call``); read when a fault starts
    groups: Callable[[], list[str]] = field(default=list)
    #: ... and the transactional ids whose transaction coordinator it records
    transactional_ids: Callable[[], list[str]] = field(default=list)
    #: the run's group consumers (subscribe or restart mode): reader id -> its shared slot
    #: (contract.liveness), through which a poll-stall fault stops their poll loops
    consumers: Callable[[], dict[str, Any]] = field(default=dict)

    def coordinators(self) -> dict[str, dict[str, int]]:
        """The broker coordinating each of :attr:`groups` (key ``coordinators``) and each
        of :attr:`transactional_ids` (``txn_coordinators``) now; one the cluster cannot name
        within a second or two is left out (no evidence rather than a late fault)."""
        out: dict[str, dict[str, int]] = {}
        asks: list[tuple[str, str, Callable[..., int]]] = [
            ("coordinators", g, self.cluster.group_coordinator) for g in self.groups()]
        asks += [("txn_coordinators", t, self.cluster.transaction_coordinator)
                 for t in self.transactional_ids()]
        for key, name, ask in asks:
            try:
                out.setdefault(key, {})[name] = ask(name, timeout_s=2)
            except Exception as e:  # noqa: BLE001 - a record, never a reason to fail a fault
                log.info("%s of %s not known: %s", key, name, e)
        return out

    @property
    def not_ours(self) -> bool:
        """Whether the cluster is one kafka-chaos did not start (someone else's data)."""
        from compose.remote import ExternalCluster  # here: listing scenarios needs no Docker

        return isinstance(self.cluster, ExternalCluster)


@runtime_checkable
class Fault(Protocol):
    """A fault. ``start`` applies it and records a start event; ``stop`` undoes it and
    records the end event. ``stop`` is idempotent and safe after a failed ``start``."""

    kind: str

    def start(self, ctx: FaultContext) -> None: ...

    def stop(self, ctx: FaultContext) -> None: ...

    @property
    def active(self) -> bool: ...

    def describe(self) -> dict[str, Any]: ...


class FaultError(RuntimeError):
    """A fault could not be applied; the message says why in one line."""


class BaseFault:
    """Shared bookkeeping: resolved targets, the active flag, start/end events."""

    kind = "fault"

    def __init__(self) -> None:
        self.targets: list[int] = []
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "targets": list(self.targets)}

    def _started(self, ctx: FaultContext, **detail: Any) -> None:
        self._active = True
        began = getattr(self, "began_ns", None)  # set by the nemesis before start()
        if began is not None:
            detail.setdefault("began_ns", began)
        ctx.events.emit(self.kind, "start", self.targets, detail)

    def _ended(self, ctx: FaultContext, **detail: Any) -> None:
        self._active = False
        ctx.events.emit(self.kind, "end", self.targets, detail)
