"""The vectorised parts of :mod:`.synthetic`: the writes and the reads, with planted anomalies.

Planted anomalies mimic how they arise in Kafka so that the report's pictures look like the
real thing: ``lost`` writes are the tail a crashed leader acknowledged (their offsets are then
reused by the new leader), ``unseen`` writes sit past where the drain stopped, ``duplicate``
records are retries appended again later, ``inconsistent-offset`` is a consumer that read a
different record than the drain at one offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from contract.schemas import OUTCOMES

from .tables import table

if TYPE_CHECKING:
    from .synthetic import SyntheticSpec

#: The outcome codes of ``Writes.outcome`` (0 ok, 1 fail, 2 info) and the error of each.
OK, FAIL, INFO = (OUTCOMES.index(o) for o in ("ok", "fail", "info"))
ERRORS = {OK: None, FAIL: "NOT_ENOUGH_REPLICAS", INFO: "_MSG_TIMED_OUT"}

S = 1_000_000_000
SETUP_S, HEAL_S, DRAIN_S, CHECK_S = 5.0, 3.0, 6.0, 2.0


@dataclass
class Plan:
    """Absolute times of the run's phases and faults."""

    t0: int
    work0: int
    work1: int
    drain0: int
    drain1: int
    end: int
    faults: list[tuple[str, list[int], int, int | None]]


def plan_times(spec: SyntheticSpec) -> Plan:
    """Lay the phases end to end and place the faults inside the workload."""
    work0 = spec.t0_ns + int(SETUP_S * S)
    work1 = work0 + int(spec.duration_s * S)
    drain0 = work1 + int(HEAL_S * S)
    drain1 = drain0 + int(DRAIN_S * S)
    faults = [
        (f.kind, f.targets, work0 + int(f.start_s * S),
         None if f.end_s is None else work0 + int(f.end_s * S))
        for f in spec.faults
    ]
    return Plan(spec.t0_ns, work0, work1, drain0, drain1, drain1 + int(CHECK_S * S), faults)


@dataclass
class Writes:
    """The writes as numpy columns (the history's schema)."""

    producer: np.ndarray
    seq: np.ndarray
    partition: np.ndarray
    invoke: np.ndarray
    complete: np.ndarray  # -1: never completed
    outcome: np.ndarray  # 0 ok, 1 fail, 2 info
    offset: np.ndarray  # -1: none

    def table(self) -> pa.Table:
        """The writes table (contract.schemas.WRITES_SCHEMA); txn columns null."""
        n = len(self.seq)
        codes = pa.array(self.outcome.astype("int8"))
        return table("writes", {
            "op_id": pa.array(np.arange(n, dtype="int64")),
            "producer": pa.array(self.producer),
            "seq": pa.array(self.seq),
            "topic": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype="int8")),
                                                    ["chaos"]).cast(pa.string()),
            "partition": pa.array(self.partition),
            "invoke_ns": pa.array(self.invoke),
            "complete_ns": pa.array(self.complete, mask=self.complete < 0),
            "outcome": pa.DictionaryArray.from_arrays(codes, list(OUTCOMES)).cast(pa.string()),
            "offset": pa.array(self.offset, mask=self.offset < 0),
            "error": pa.DictionaryArray.from_arrays(
                codes, [ERRORS[c] for c in range(len(OUTCOMES))]).cast(pa.string()),
        })


def _in_faults(plan: Plan, ts: np.ndarray) -> np.ndarray:
    hit = np.zeros(len(ts), dtype=bool)
    for _, _, a, b in plan.faults:
        hit |= (ts >= a) & (ts <= (b if b is not None else plan.end))
    return hit


def make_writes(spec: SyntheticSpec, plan: Plan, rng: np.random.Generator) -> Writes:
    """Writes spread over the workload; slower and sometimes failing while faults are on."""
    n = spec.writes
    span = plan.work1 - plan.work0
    invoke = plan.work0 + np.sort(rng.integers(0, span, n, dtype="int64"))
    faulty = _in_faults(plan, invoke)
    latency = (rng.lognormal(np.log(3e6), 0.5, n) * np.where(faulty, 25, 1)).astype("int64")
    roll = rng.random(n)
    outcome = np.where(faulty & (roll < 0.04), 1, np.where(faulty & (roll > 0.95), 2, 0))
    complete = invoke + latency
    complete[(outcome == 2) & (roll > 0.985)] = -1  # some unknowns never completed
    partition = rng.integers(0, spec.partitions, n, dtype="int64")
    producer = np.arange(n, dtype="int64") % spec.producers
    seq = np.arange(n, dtype="int64") // spec.producers
    offset = np.full(n, -1, dtype="int64")
    ok = np.flatnonzero(outcome == 0)
    # Offsets in acknowledgement order within each partition.
    order = ok[np.lexsort((complete[ok], partition[ok]))]
    parts = partition[order]
    starts = np.searchsorted(parts, np.arange(spec.partitions))
    offset[order] = np.arange(len(order)) - starts[parts]
    return Writes(producer, seq, partition, invoke, complete, outcome, offset)


@dataclass
class Truth:
    """What was planted: the reads as a table, and the indices of each anomaly's writes."""

    reads: pa.Table
    drain_complete: bool
    lost: np.ndarray
    unseen: np.ndarray
    duplicate: np.ndarray
    dup_offsets: np.ndarray
    inconsistent: list[dict[str, Any]]
    divergence: list[dict[str, Any]]


def plant_anomalies(
    spec: SyntheticSpec, plan: Plan, w: Writes, rng: np.random.Generator
) -> Truth:
    """Decide which writes are lost/unseen/duplicated and build the reads accordingly."""
    read_at = w.offset.copy()
    lost = np.array([], dtype="int64")
    if spec.lost and spec.partitions > 1:
        # The tail partition 1's leader acknowledged just before the first fault, then lost.
        cut = plan.faults[0][2] if plan.faults else (plan.work0 + plan.work1) // 2
        p1 = np.flatnonzero((w.partition == 1) & (w.outcome == 0))
        p1 = p1[np.argsort(w.offset[p1])]
        before = p1[w.complete[p1] <= cut]
        lost = before[-spec.lost:]
        later = p1[w.offset[p1] > w.offset[lost].max()] if len(lost) else p1[:0]
        w.offset[later] -= len(lost)  # the new leader reuses the lost offsets
        read_at = w.offset.copy()
    unseen = np.array([], dtype="int64")
    part_u = spec.partitions - 1
    if spec.unseen:
        pu = np.flatnonzero((w.partition == part_u) & (w.outcome == 0))
        unseen = pu[np.argsort(w.offset[pu])][-spec.unseen:]
    read = (w.outcome == 0)
    read[lost] = False
    read[unseen] = False
    idx = np.flatnonzero(read)
    idx = idx[np.lexsort((read_at[idx], w.partition[idx]))]
    drain_ns = np.linspace(plan.drain0, plan.drain1 - S, max(len(idx), 1)).astype("int64")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (
        "reader", "poll", "read_ns", "partition", "offset", "producer", "seq")}

    def add(reader: int, rows: np.ndarray, at: np.ndarray, when: np.ndarray) -> None:
        cols["reader"].append(np.full(len(rows), reader, dtype="int8"))
        cols["poll"].append(at // 500)
        cols["read_ns"].append(when)
        cols["partition"].append(w.partition[rows])
        cols["offset"].append(at)
        cols["producer"].append(w.producer[rows])
        cols["seq"].append(w.seq[rows])

    add(0, idx, read_at[idx], drain_ns[: len(idx)])
    dup = np.array([], dtype="int64")
    dup_offsets = np.array([], dtype="int64")
    if spec.duplicate:
        dup = rng.choice(idx, size=min(spec.duplicate, len(idx)), replace=False)
        ends = np.bincount(w.partition[idx], weights=None, minlength=spec.partitions)
        dup_offsets = ends[w.partition[dup]] + np.arange(len(dup))
        add(0, dup, dup_offsets, np.full(len(dup), plan.drain1 - S // 2, dtype="int64"))
    inconsistent: list[dict[str, Any]] = []
    if spec.consumer:
        c0 = idx[w.partition[idx] == 0]
        add(1, c0, read_at[c0], np.maximum(w.complete[c0], w.invoke[c0]) + 50_000_000)
        if spec.inconsistent and len(c0):
            # c0 read another record (an unknown-outcome write) where the drain read these.
            picks = np.sort(rng.choice(len(c0), size=min(spec.inconsistent, len(c0)),
                                       replace=False))
            others = np.flatnonzero(w.outcome == 2)[: len(picks)]
            seq_col = cols["seq"][-1]
            prod_col = cols["producer"][-1]
            for j, o in zip(picks, others, strict=False):
                inconsistent.append({"partition": 0, "offset": int(read_at[c0[j]]),
                                     "drain": (int(prod_col[j]), int(seq_col[j])),
                                     "c0": (int(w.producer[o]), int(w.seq[o]))})
                prod_col[j], seq_col[j] = w.producer[o], w.seq[o]
    divergence = [
        {"topic": "chaos", "partition": 1, "offset": int(read_at[idx[k]]),
         "replicas": {"n1": {"digest": f"{k:08x}aa", "value_size": 100, "leader_epoch": 3},
                      "n3": {"digest": f"{k:08x}bb", "value_size": 100, "leader_epoch": 2}}}
        for k in range(min(spec.divergence, len(idx)))
    ]
    reader_names = ["drain", "c0"]
    code = np.concatenate(cols["reader"])
    n = len(code)
    reads = table("reads", {
        "reader": pa.DictionaryArray.from_arrays(pa.array(code), reader_names).cast(pa.string()),
        "mode": pa.DictionaryArray.from_arrays(pa.array(code), ["drain", "assign"]).cast(
            pa.string()),
        "poll": pa.array(np.concatenate(cols["poll"])),
        "read_ns": pa.array(np.concatenate(cols["read_ns"])),
        "topic": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype="int8")), ["chaos"]).cast(pa.string()),
        "partition": pa.array(np.concatenate(cols["partition"])),
        "offset": pa.array(np.concatenate(cols["offset"])),
        "producer": pa.array(np.concatenate(cols["producer"])),
        "seq": pa.array(np.concatenate(cols["seq"])),
        "valid": pa.array(np.ones(n, dtype=bool)),
    })
    return Truth(reads, not spec.unseen, lost, unseen, dup, dup_offsets, inconsistent,
                 divergence)
