"""Run directories for the report tests: written by hand, or by the synthetic generator.

``hand_run`` is fully literal (a dozen writes, single-file Parquet, a torn events line), so the
report's reading of the contract is tested without our own generator in the loop. The
``*_run`` fixtures built with ``reports.synthetic`` write Parquet datasets as directories of
part files, like the workloads do (CONVENTIONS.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contract.anomalies import ANOMALY_KINDS
from reports.synthetic import Fault, SyntheticSpec, write_synthetic_run

S = 1_000_000_000
T0 = 1_795_339_800 * S
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "reports"


def write_hand_run(run_dir: Path, results: dict | None) -> Path:
    """A tiny literal run: 12 writes to one partition, one kill, one lost write."""
    h = run_dir / "history"
    h.mkdir(parents=True)
    n = 12
    outcome = ["ok"] * 9 + ["fail", "info", "info"]
    complete = [T0 + (i + 1) * S + 5_000_000 for i in range(11)] + [None]
    pq.write_table(pa.table({
        "op_id": pa.array(range(n), pa.int64()),
        "producer": pa.array([0] * n, pa.int32()),
        "seq": pa.array(range(n), pa.int64()),
        "topic": ["t"] * n,
        "partition": pa.array([0] * n, pa.int32()),
        "invoke_ns": pa.array([T0 + (i + 1) * S for i in range(n)], pa.int64()),
        "complete_ns": pa.array(complete, pa.int64()),
        "outcome": outcome,
        "offset": pa.array(list(range(9)) + [None] * 3, pa.int64()),
        "error": [None] * 9 + ["NOT_ENOUGH_REPLICAS", "_MSG_TIMED_OUT", "_MSG_TIMED_OUT"],
        "txn": pa.nulls(n, pa.string()),
        "txn_outcome": pa.nulls(n, pa.string()),
    }), h / "writes.parquet")
    read_offsets = [o for o in range(9) if o != 4]  # offset 4 (seq 4) was lost
    pq.write_table(pa.table({
        "reader": ["drain"] * len(read_offsets),
        "mode": ["drain"] * len(read_offsets),
        "poll": pa.array([0] * len(read_offsets), pa.int64()),
        "read_ns": pa.array([T0 + 20 * S] * len(read_offsets), pa.int64()),
        "topic": ["t"] * len(read_offsets),
        "partition": pa.array([0] * len(read_offsets), pa.int32()),
        "offset": pa.array(read_offsets, pa.int64()),
        "producer": pa.array([0] * len(read_offsets), pa.int32()),
        "seq": pa.array(read_offsets, pa.int64()),
        "valid": [True] * len(read_offsets),
    }), h / "reads.parquet")
    pq.write_table(pa.table({
        "ts_ns": pa.array([T0 + i * S // 2 for i in range(40)], pa.int64()),
        "topic": ["t"] * 40,
        "partition": pa.array([0] * 40, pa.int32()),
        "leader": pa.array([1 if i < 10 else -1 if i < 12 else 2 for i in range(40)],
                           pa.int32()),
        "isr": pa.array([[1, 2] if i < 10 else [2] for i in range(40)], pa.list_(pa.int32())),
        "replicas": pa.array([[1, 2]] * 40, pa.list_(pa.int32())),
        "leader_epoch": pa.array([0 if i < 10 else 1 for i in range(40)], pa.int32()),
    }), h / "observations.parquet")
    events = [
        {"ts_ns": T0, "kind": "phase", "phase": "start", "targets": [],
         "detail": {"name": "workload"}},
        {"ts_ns": T0 + 5 * S, "kind": "kill", "phase": "start", "targets": ["n1"], "detail": {}},
        {"ts_ns": T0 + 8 * S, "kind": "kill", "phase": "end", "targets": ["n1"], "detail": {}},
        {"ts_ns": T0 + 9 * S, "kind": "pause", "phase": "start", "targets": ["n2"],
         "detail": {}},
        {"ts_ns": T0 + 13 * S, "kind": "phase", "phase": "end", "targets": [],
         "detail": {"name": "workload"}},
    ]
    text = "".join(json.dumps(e) + "\n" for e in events) + '{"ts_ns": 12, "kind": "ki'
    (h / "events.jsonl").write_text(text)  # the torn last line of a crashed run
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


def hand_results() -> dict:
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


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    return write_hand_run(tmp_path / "runs" / "hand-written" / "20261122T093000Z",
                          hand_results())


def valid_spec() -> SyntheticSpec:
    return SyntheticSpec(scenario="safe-config-chaos", writes=6_000, duration_s=40.0, seed=11,
                         timeseries=True,  # the checker's own per-second series
                         faults=[Fault("kill", [2], 8, 14), Fault("pause", [3], 22, 28)])


def invalid_spec() -> SyntheticSpec:
    """acks=all, min.insync=2, unclean=false: every planted anomaly is forbidden."""
    return SyntheticSpec(scenario="follower-restart-leader-crash", writes=12_000,
                         duration_s=60.0, seed=12, lost=45, duplicate=8, inconsistent=5,
                         divergence=3)


def unknown_spec() -> SyntheticSpec:
    return SyntheticSpec(scenario="last-replica-standing", writes=5_000, duration_s=30.0,
                         seed=13, unseen=25,
                         faults=[Fault("pause", [2], 5, 12), Fault("power-loss", [1], 20, None)])


def large_spec() -> SyntheticSpec:
    """Big enough to exercise downsampling and capping, light enough for a shared machine."""
    return SyntheticSpec(scenario="safe-config-chaos", writes=400_000, duration_s=900.0,
                         partitions=12, producers=4, seed=14, lost=300, acks="1",
                         faults=[Fault(k, [1 + i % 3], 30 + i * 60, 50 + i * 60)
                                 for i, k in enumerate(["kill", "pause", "partition"] * 4)],
                         part_rows=100_000)


@pytest.fixture
def valid_run(tmp_path: Path) -> Path:
    return write_synthetic_run(valid_spec(), tmp_path / "valid")


@pytest.fixture
def invalid_run(tmp_path: Path) -> Path:
    return write_synthetic_run(invalid_spec(), tmp_path / "invalid")


@pytest.fixture
def unknown_run(tmp_path: Path) -> Path:
    return write_synthetic_run(unknown_spec(), tmp_path / "unknown")


@pytest.fixture(scope="session")
def large_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_run(large_spec(), tmp_path_factory.mktemp("large") / "run")


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots and rendered pages are kept for a human to look at (gitignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
