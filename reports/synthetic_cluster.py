"""Synthetic cluster observations and events for ``reports.synthetic``.

Leadership follows the faults the way KRaft would move it: a killed or cut-off leader's
partitions go briefly offline, then a surviving in-sync replica leads; a paused follower drops
out of the ISR after a lag timeout and rejoins after it resumes and catches up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .synthetic_history import Plan, S

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
    return pa.table({
        "ts_ns": pa.array(rows["ts_ns"], pa.int64()),
        "topic": pa.array(rows["topic"], pa.string()),
        "partition": pa.array(rows["partition"], pa.int32()),
        "leader": pa.array(rows["leader"], pa.int32()),
        "isr": pa.array(rows["isr"], pa.list_(pa.int32())),
        "replicas": pa.array(rows["replicas"], pa.list_(pa.int32())),
        "leader_epoch": pa.array(rows["leader_epoch"], pa.int32()),
    })


def make_events(spec: SyntheticSpec, plan: Plan, drain_complete: bool) -> list[dict[str, Any]]:
    """Phase events and fault start/end events, in time order."""
    heal0 = plan.work1
    events: list[dict[str, Any]] = []

    def phase(name: str, a: int, b: int, **detail: Any) -> None:
        events.append({"ts_ns": a, "kind": "phase", "phase": "start", "targets": [],
                       "detail": {"name": name}})
        events.append({"ts_ns": b, "kind": "phase", "phase": "end", "targets": [],
                       "detail": {"name": name, **detail}})

    phase("setup", plan.t0, plan.work0)
    phase("workload", plan.work0, plan.work1)
    phase("heal", heal0, plan.drain0)
    phase("drain", plan.drain0, plan.drain1, complete=drain_complete,
          end_offsets={f"chaos:{p}": 0 for p in range(spec.partitions)})
    phase("check", plan.drain1, plan.end)
    for kind, targets, a, b in plan.faults:
        tg = [f"n{t}" for t in targets]
        events.append({"ts_ns": a, "kind": kind, "phase": "start", "targets": tg,
                       "detail": {"signal": "SIGKILL"} if kind == "kill" else {}})
        if b is not None:
            events.append({"ts_ns": b, "kind": kind, "phase": "end", "targets": tg,
                           "detail": {}})
    events.sort(key=lambda e: e["ts_ns"])
    return events
