"""Building blocks of scripted scenarios: poll the partition's state with bounded waits, and
record that the script really reached the situation its scenario is about.

A scenario must never pass without having set up its situation. Every script therefore
emits a ``situation`` event (instant) at the moment it verified, from the cluster's own
metadata, that the precondition holds (e.g. "the ISR is the leader alone, and we are about
to cut its power"). The scenario's mechanism list asks for that event
(``{"kind": "fault", "fault": "situation"}``), next to the observation-based mechanisms, so
a script that gave up early leaves the run ``unknown``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from compose.admin import ClusterError, PartitionState
from contract.events import SITUATION
from nemesis.faults.base import Fault, FaultError

log = logging.getLogger("kafka_chaos.scenarios")

#: Event kind (and ``fault`` mechanism name) marking a verified precondition.
SITUATION_MECHANISM: dict[str, Any] = {"kind": "fault", "fault": SITUATION}


class SetupFailed(RuntimeError):
    """The script could not bring the cluster into its situation within the bounded wait."""


def state(nem: Any, partition: int = 0) -> PartitionState | None:
    """The partition's leader/replicas/ISR now, or None while metadata cannot be read."""
    try:
        for p in nem.ctx.cluster.describe(nem.ctx.topic):
            if p.partition == partition:
                return p
    except (KafkaException, ClusterError):
        return None
    return None


def wait_state(nem: Any, what: str, cond: Callable[[PartitionState], bool],
               timeout_s: float, partition: int = 0, poll_s: float = 0.1) -> PartitionState:
    """Polls the partition's metadata until ``cond`` holds; raises SetupFailed on timeout
    (or when the run is told to stop)."""
    end = time.monotonic() + timeout_s
    last: PartitionState | None = None
    while True:
        st = state(nem, partition)
        if st is not None:
            last = st
            if cond(st):
                return st
        if time.monotonic() >= end:
            raise SetupFailed(f"timed out after {timeout_s:.0f}s waiting for {what} "
                              f"(last: leader={last.leader if last else '?'} "
                              f"isr={list(last.isr) if last else '?'})")
        if nem.wait(poll_s):
            raise SetupFailed(f"run stopped while waiting for {what}")


@dataclass(frozen=True)
class LeaderOffsets:
    """The partition's high watermark and leader epoch as its leader answered just now."""

    hw: int
    epoch: int | None


def wait_offsets(nem: Any, what: str, cond: Callable[[LeaderOffsets], bool],
                 timeout_s: float, admin: AdminClient | None = None, partition: int = 0,
                 poll_s: float = 0.1) -> LeaderOffsets:
    """Asks the partition's leader for its high watermark and epoch (ListOffsets) until
    ``cond`` holds; raises SetupFailed on timeout (or when the run is told to stop)."""
    cluster = nem.ctx.cluster
    end = time.monotonic() + timeout_s
    last: LeaderOffsets | None = None
    while True:
        try:
            hw, epoch = cluster.high_watermark(nem.ctx.topic, partition, admin,
                                               timeout_s=min(3.0, max(0.5, timeout_s)))
            last = LeaderOffsets(hw, epoch)
            if cond(last):
                return last
        except (KafkaException, ClusterError):
            pass  # no answer now (the leader moving or stalled); asked again
        if time.monotonic() >= end:
            raise SetupFailed(f"timed out after {timeout_s:.0f}s waiting for {what} "
                              f"(last: {last})")
        if nem.wait(poll_s):
            raise SetupFailed(f"run stopped while waiting for {what}")


def full_isr(st: PartitionState) -> bool:
    return st.leader >= 0 and set(st.isr) == set(st.replicas)


def isr_is(*ids: int) -> Callable[[PartitionState], bool]:
    return lambda st: set(st.isr) == set(ids)


def led_alone_by(leader: int) -> Callable[[PartitionState], bool]:
    """``leader`` leads and is the only member of the ISR."""
    return lambda st: st.leader == leader and set(st.isr) == {leader}


def led_by_other(old: int) -> Callable[[PartitionState], bool]:
    """The partition has a leader, and it is not ``old``."""
    return lambda st: st.leader >= 0 and st.leader != old


def member_under(replica: int, leader: int) -> Callable[[PartitionState], bool]:
    """``replica`` is in the ISR while ``leader`` still leads."""
    return lambda st: replica in st.isr and st.leader == leader


def not_in_isr(replica: int) -> Callable[[PartitionState], bool]:
    return lambda st: replica not in st.isr


def situation(nem: Any, what: str, targets: list[int], **detail: Any) -> None:
    """Records that the scenario's precondition was verified right now."""
    nem.ctx.events.emit(SITUATION, "instant", targets, {"what": what, **detail})
    log.info("situation reached: %s %s", what, detail)


def start(nem: Any, fault: Fault) -> Fault:
    """Starts a fault; a fault that cannot start is a failed setup."""
    try:
        started: Fault = nem.start_fault(fault)
        return started
    except (FaultError, ClusterError) as e:
        raise SetupFailed(f"{fault.kind} could not start: {e}") from e


def run_guarded(nem: Any, body: Callable[[Any], None]) -> None:
    """Runs a script body; a failed setup is noted (the run then ends ``unknown`` through
    the missing ``situation`` event) instead of failing the whole run."""
    try:
        body(nem)
    except SetupFailed as e:
        log.warning("scenario setup failed: %s", e)
        nem.note(f"scenario setup failed: {e}")


def time_left(nem: Any) -> float:
    """Seconds until the workload phase ends."""
    return float(nem.deadline - time.monotonic())
