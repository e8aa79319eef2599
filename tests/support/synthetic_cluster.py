"""Synthetic cluster observations and events for :mod:`.synthetic`.

Leadership follows the faults the way KRaft would move it: a killed or cut-off leader's
partitions go briefly offline, then a surviving in-sync replica leads; a paused follower drops
out of the ISR after a lag timeout and rejoins after it resumes and catches up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from contract.events import END, START
from contract.faults import FAULTS

from .synthetic_history import Plan, S
from .tables import event, phase_event, table

if TYPE_CHECKING:
    from .synthetic import SyntheticSpec

SAMPLE_NS = 250_000_000  # the observer samples four times a second
ELECTION_NS = 600_000_000
LAG_TIMEOUT_NS = 3 * S
CATCH_UP_NS = 2 * S


def make_observations(spec: SyntheticSpec, plan: Plan) -> pa.Table:
    """Leader, ISR, replicas and epoch of every partition, sampled through the run."""
    times = np.arange(plan.t0, plan.end, SAMPLE_NS, dtype="int64")
    nodes = list(range(1, spec.brokers + 1))
    rf = min(3, spec.brokers)
    rows: dict[str, list[Any]] = {k: [] for k in (
        "ts_ns", "topic", "partition", "leader", "isr", "replicas", "leader_epoch")}
    for p in range(spec.partitions):
        replicas = [nodes[(p + i) % len(nodes)] for i in range(rf)]
        leader, epoch = replicas[0], 0
        for ts in times:
            down = {t for k, ts_, a, b in plan.faults for t in ts_
                    if k in ("kill", "partition") and a <= ts < (b or plan.end)}
            lagging = {t for k, ts_, a, b in plan.faults for t in ts_
                       if (k in ("kill", "partition") and a <= ts < (b or plan.end) + CATCH_UP_NS)
                       or (k == "pause" and a + LAG_TIMEOUT_NS <= ts < (b or plan.end)
                           + CATCH_UP_NS)}
            # A leader never drops itself from the ISR; only followers fall out.
            isr = [r for r in replicas if r == leader or r not in lagging]
            offline = any(k in ("kill", "partition") and leader in ts_ and a <= ts < a
                          + ELECTION_NS for k, ts_, a, _ in plan.faults)
            if leader in down and not offline:
                candidates = [r for r in isr if r not in down]
                if candidates:
                    leader, epoch = candidates[0], epoch + 1
            rows["ts_ns"].append(int(ts))
            rows["topic"].append("chaos")
            rows["partition"].append(p)
            rows["leader"].append(-1 if offline else leader)
            rows["isr"].append(isr)
            rows["replicas"].append(replicas)
            rows["leader_epoch"].append(epoch)
    # high_watermark and log_end_offsets stay null, as when the observer cannot get them.
    return table("observations", rows)


def fault_details(kind: str, targets: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The start and end details a fault of ``kind`` writes (``nemesis/faults/``): the target
    spec it resolved; a partition its shape (and only the shape when it heals)."""
    if kind not in FAULTS:
        raise ValueError(f"unknown fault kind {kind!r} (known: {', '.join(FAULTS)})")
    target = ",".join(map(str, targets))
    if kind in ("partition", "voter-partition"):
        return {"shape": "isolate", "target": target}, {"shape": "isolate"}
    return {"target": target}, {"target": target}


def make_events(plan: Plan, drain_complete: bool,
                end_offsets: dict[str, int]) -> list[dict[str, Any]]:
    """Phase events and fault start/end events, in time order (``end_offsets``: the drain's
    targets, keyed ``"<topic>:<partition>"``)."""
    events: list[dict[str, Any]] = []

    def phase(name: str, a: int, b: int, **detail: Any) -> None:
        events.append(phase_event(a, name, START))
        events.append(phase_event(b, name, END, **detail))

    phase("setup", plan.t0, plan.work0)
    phase("workload", plan.work0, plan.work1)
    phase("heal", plan.work1, plan.drain0)
    phase("drain", plan.drain0, plan.drain1, complete=drain_complete,
          end_offsets=end_offsets)
    for kind, targets, a, b in plan.faults:
        started, ended = fault_details(kind, targets)
        events.append(event(a, kind, START, targets, **started))
        if b is not None:
            events.append(event(b, kind, END, targets, **ended))
    events.sort(key=lambda e: e["ts_ns"])
    return events
