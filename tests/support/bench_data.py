"""Synthetic histories for the checker benchmark, written with numpy + pyarrow.

A log per partition holds every write that landed (ok writes and half of the info writes)
in order; the drain reads every log; consumer ``c0`` reads partition 0 in assign mode. A few
anomalies of most kinds are injected so that every check has work: lost records (never
read), duplicates (read again past the log end), swapped neighbours (offset mismatch,
reorder), failed writes that are visible, undecodable values, consumer skips and rewinds,
reused offsets (consumer ``c1`` read records the log no longer holds) and reads before
their write.
Tables in the contract's schemas and events as real runs write them (:mod:`.tables`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from contract.events import END, START

from .tables import event, phase_event, table, write_dataset, write_events

BASE_NS = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class Spec:
    writes: int
    producers: int = 4
    partitions: int = 8
    rate_per_s: int = 10_000
    part_files: int = 4
    seed: int = 7
    topic: str = "bench"


def _write_parts(tbl: pa.Table, d: str, parts: int) -> None:
    write_dataset(d, tbl, max(1, -(-tbl.num_rows // parts)), prefix="part-bench",
                  compression="snappy")


def generate(spec: Spec, run_dir: str) -> dict[str, int]:
    """Write run.json and history/ for ``spec`` into ``run_dir``; sizes written."""
    rnd = np.random.default_rng(spec.seed)
    n = spec.writes
    i = np.arange(n, dtype=np.int64)
    producer = (i % spec.producers).astype(np.int32)
    seq = i // spec.producers
    partition = ((i * 7 + i // 13) % spec.partitions).astype(np.int32)
    invoke = BASE_NS + i * (1_000_000_000 // spec.rate_per_s)
    complete = invoke + rnd.integers(1_000_000, 20_000_000, n)
    u = rnd.random(n)
    outcome = np.where(u < 0.01, "fail", np.where(u < 0.02, "info", "ok"))
    landed = (outcome == "ok") | ((outcome == "info") & (i % 2 == 0))
    landed |= (outcome == "fail") & (rnd.random(n) < 0.001)  # failed-visible
    # offsets: position of each landed record in its partition's log
    offset = np.full(n, -1, dtype=np.int64)
    order = np.lexsort((i, partition))
    lp = partition[order]
    ll = landed[order]
    csum = np.cumsum(ll) - 1
    starts = np.searchsorted(lp, np.arange(spec.partitions))
    base = np.zeros(spec.partitions, dtype=np.int64)
    for p in range(spec.partitions):
        base[p] = csum[starts[p] - 1] + 1 if starts[p] > 0 else 0
    offset[order] = np.where(ll, csum - base[lp], -1)
    acked_off = np.where(outcome == "ok", offset, -1)
    writes = table("writes", {
        "op_id": i, "producer": producer, "seq": seq,
        "topic": pa.array(np.full(n, spec.topic)), "partition": partition,
        "invoke_ns": invoke, "complete_ns": complete, "outcome": outcome,
        "offset": pa.array(acked_off, mask=acked_off < 0),
        "error": pa.array(np.where(outcome == "ok", "", "_MSG_TIMED_OUT"),
                          mask=outcome == "ok"),
    })
    # the drain reads every landed record, except a few "lost" ones
    li = np.flatnonzero(landed)
    keep = rnd.random(li.size) >= 0.0001
    d_idx = li[keep]
    d_prod = producer[d_idx].copy()
    d_seq = seq[d_idx].copy()
    d_off = offset[d_idx]
    d_part = partition[d_idx]
    # swap a few neighbours' identities (offset-mismatch, maybe reorder)
    by_log = np.lexsort((d_off, d_part))  # neighbours in the log, not in write order
    pick = np.flatnonzero(rnd.random(d_idx.size - 1) < 0.00002)
    x, y = by_log[pick], by_log[pick + 1]
    same = d_part[x] == d_part[y]
    x, y = x[same], y[same]
    d_prod[x], d_prod[y] = d_prod[y].copy(), d_prod[x].copy()
    d_seq[x], d_seq[y] = d_seq[y].copy(), d_seq[x].copy()
    valid = rnd.random(d_idx.size) >= 0.00001  # undecodable values
    # duplicates: a few records read again past the end of their partition's log
    dup = d_idx[rnd.random(d_idx.size) < 0.00005]
    ends = np.bincount(partition[landed], minlength=spec.partitions)
    dup_off = ends[partition[dup]] + np.arange(dup.size)
    r_prod = np.concatenate([d_prod, producer[dup]])
    r_seq = np.concatenate([d_seq, seq[dup]])
    r_off = np.concatenate([d_off, dup_off])
    r_part = np.concatenate([d_part, partition[dup]])
    r_valid = np.concatenate([valid, np.ones(dup.size, bool)])
    m = r_prod.size
    drain = {
        "reader": np.full(m, "drain"), "mode": np.full(m, "drain"),
        "poll": np.arange(m, dtype=np.int64) // 500,
        "read_ns": BASE_NS + n * (1_000_000_000 // spec.rate_per_s) + np.arange(m) * 1000,
        "partition": r_part, "offset": r_off, "producer": r_prod, "seq": r_seq,
        "valid": r_valid,
    }
    # consumer c0 reads partition 0 in offset order, skipping and rewinding a few times
    c = np.flatnonzero(d_part == 0)
    c = c[np.argsort(d_off[c], kind="stable")]
    c = c[rnd.random(c.size) >= 0.00005]
    c_off = d_off[c].copy()
    back = rnd.random(c.size) < 0.00002
    c_off[back] = np.maximum(c_off[back] - 1, 0)
    k = c.size
    consumer = {
        "reader": np.full(k, "c0"), "mode": np.full(k, "assign"),
        "poll": np.arange(k, dtype=np.int64) // 200, "read_ns": invoke[d_idx[c]] + 5_000_000,
        "partition": d_part[c], "offset": c_off, "producer": d_prod[c], "seq": d_seq[c],
        "valid": valid[c],
    }
    # consumer c1 reads the first twentieth of partition 1, one record per poll; where the
    # drain read another record it sees a few records the log no longer holds (never
    # drained: a truncated tail's, so those offsets were reused), and a few of its reads
    # come 2 s before their write's first attempt (read-before-write)
    c1 = np.flatnonzero(d_part == 1)
    c1 = c1[np.argsort(d_off[c1], kind="stable")][: c1.size // 20]
    c1_prod, c1_seq, c1_valid = d_prod[c1].copy(), d_seq[c1].copy(), valid[c1].copy()
    gone = li[~keep]
    gone = gone[partition[gone] == 1][: c1.size]
    slots = rnd.choice(c1.size, size=gone.size, replace=False)
    c1_prod[slots], c1_seq[slots], c1_valid[slots] = producer[gone], seq[gone], True
    c1_ns = invoke[c1_seq * spec.producers + c1_prod] + 5_000_000  # write i: seq*P + producer
    early = rnd.random(c1.size) < 0.0005
    c1_ns[early] -= 2_005_000_000
    reused = {
        "reader": np.full(c1.size, "c1"), "mode": np.full(c1.size, "assign"),
        "poll": np.arange(c1.size, dtype=np.int64), "read_ns": c1_ns,
        "partition": d_part[c1], "offset": d_off[c1], "producer": c1_prod, "seq": c1_seq,
        "valid": c1_valid,
    }
    cols = {key: np.concatenate([drain[key], consumer[key], reused[key]]) for key in drain}
    bad = ~cols["valid"]
    reads = table("reads", {
        "reader": cols["reader"], "mode": cols["mode"], "poll": cols["poll"],
        "read_ns": cols["read_ns"], "topic": pa.array(np.full(cols["poll"].size, spec.topic)),
        "partition": cols["partition"], "offset": cols["offset"],
        "producer": pa.array(cols["producer"].astype(np.int32), mask=bad),
        "seq": pa.array(cols["seq"], mask=bad), "valid": cols["valid"],
    })
    hist = os.path.join(run_dir, "history")
    _write_parts(writes, os.path.join(hist, "writes.parquet"), spec.part_files)
    _write_parts(reads, os.path.join(hist, "reads.parquet"), spec.part_files)
    end_offsets = {f"{spec.topic}:{p}": int(ends[p]) for p in range(spec.partitions)}
    t_end = int(invoke[-1] + 1_000_000_000)
    t_kill = BASE_NS + (t_end - BASE_NS) // 2
    events = [
        phase_event(BASE_NS, "workload", START),
        event(t_kill, "kill", START, [2], target="2"),
        event(t_kill + 5_000_000_000, "kill", END, [2], target="2"),
        phase_event(t_end, "workload", END),
        phase_event(t_end + 1, "drain", END, complete=True, end_offsets=end_offsets),
    ]
    write_events(os.path.join(hist, "events.jsonl"), events)
    run = {"scenario": "bench", "cluster": {"brokers": 3},
           "topic_config": {"min.insync.replicas": 2, "replication.factor": 3},
           "producer_config": {"acks": "all", "enable.idempotence": True},
           "broker_config": {}, "consumer_config": {}, "bench_spec": asdict(spec)}
    with open(os.path.join(run_dir, "run.json"), "w") as fh:
        json.dump(run, fh)
    return {"writes": n, "reads": int(reads.num_rows)}
