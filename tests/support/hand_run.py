"""The report tests' literal run: a dozen writes, one kill, one lost write, a torn events line.

Fully literal (single-file Parquet, every value written out), so the report's reading of the
contract is tested without the synthetic generator in the loop. Tables in the contract's schemas
(:mod:`.tables`); events as real runs write them (integer node ids as targets).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contract.anomalies import ANOMALY_KINDS
from contract.events import END, START

from .tables import event, phase_event, table, write_events, write_single_file

S = 1_000_000_000
T0 = 1_795_339_800 * S


def write_hand_run(run_dir: Path, results: dict[str, Any] | None) -> Path:
    """A tiny literal run: 12 writes to one partition, one kill, one lost write."""
    h = run_dir / "history"
    h.mkdir(parents=True)
    n = 12
    complete = [T0 + (i + 1) * S + 5_000_000 for i in range(11)] + [None]
    write_single_file(h / "writes.parquet", table("writes", {
        "op_id": list(range(n)),
        "producer": [0] * n,
        "seq": list(range(n)),
        "topic": ["t"] * n,
        "partition": [0] * n,
        "invoke_ns": [T0 + (i + 1) * S for i in range(n)],
        "complete_ns": complete,
        "outcome": ["ok"] * 9 + ["fail", "info", "info"],
        "offset": list(range(9)) + [None] * 3,
        "error": [None] * 9 + ["NOT_ENOUGH_REPLICAS", "_MSG_TIMED_OUT", "_MSG_TIMED_OUT"],
    }))
    read_offsets = [o for o in range(9) if o != 4]  # offset 4 (seq 4) was lost
    k = len(read_offsets)
    write_single_file(h / "reads.parquet", table("reads", {
        "reader": ["drain"] * k,
        "mode": ["drain"] * k,
        "poll": [0] * k,
        "read_ns": [T0 + 20 * S] * k,
        "topic": ["t"] * k,
        "partition": [0] * k,
        "offset": read_offsets,
        "producer": [0] * k,
        "seq": read_offsets,
        "valid": [True] * k,
    }))
    write_single_file(h / "observations.parquet", table("observations", {
        "ts_ns": [T0 + i * S // 2 for i in range(40)],
        "topic": ["t"] * 40,
        "partition": [0] * 40,
        "leader": [1 if i < 10 else -1 if i < 12 else 2 for i in range(40)],
        "isr": [[1, 2] if i < 10 else [2] for i in range(40)],
        "replicas": [[1, 2]] * 40,
        "leader_epoch": [0 if i < 10 else 1 for i in range(40)],
    }))
    events = [
        phase_event(T0, "workload", START),
        event(T0 + 5 * S, "kill", START, [1], target="1"),
        event(T0 + 8 * S, "kill", END, [1], target="1"),
        event(T0 + 9 * S, "pause", START, [2], target="2"),
        phase_event(T0 + 13 * S, "workload", END),
    ]
    # The torn last line of a crashed run.
    write_events(h / "events.jsonl", events, torn_tail='{"ts_ns": 12, "kind": "ki')
    (run_dir / "run.json").write_text(json.dumps({
        "scenario": "hand-written", "run_id": "20261122T093000Z",
        "started_at": "2026-11-22T09:30:00Z", "seed": 1,
        "cluster": {"brokers": 2, "kafka_version": "4.1.1"},
        "workload": {"topic": "t", "partitions": 1, "producers": 1, "duration_s": 12},
        "faults": {"kinds": ["kill", "pause"]},
        "topic_config": {"replication.factor": 2, "min.insync.replicas": 2},
        "producer_config": {"acks": "all", "enable.idempotence": True},
    }))
    if results is not None:
        (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir


def hand_results() -> dict[str, Any]:
    """results.json for :func:`write_hand_run`: the one lost write, nothing else."""
    anomalies = {k: {"count": 0, "allowed": False, "examples": []} for k in ANOMALY_KINDS}
    anomalies["lost"] = {"count": 1, "allowed": False, "examples": [
        {"producer": 0, "seq": 4, "topic": "t", "partition": 0, "acked_offset": 4,
         "complete_ns": T0 + 5 * S + 5_000_000}]}
    return {
        "valid": False, "anomalies": anomalies,
        "stats": {"writes": {"ok": 9, "fail": 1, "info": 2}, "reads": 8,
                  "drain_complete": True, "duration_s": 12.0, "ack_rate_per_s": 0.75,
                  "unavailable_s": 1.0},
        "guarantees": {"lost": "forbidden: acks=all, min.insync.replicas=2, unclean=false"},
        "checker": {"engine": "pyspark", "master": "local[2]", "seconds": 3.2},
    }
