"""Synthetic run directories: for the report's tests, its benchmark and previewing a report.

``write_synthetic_run(spec, run_dir)`` writes what a real run would leave behind (run.json, the
history as Parquet datasets of part files, events.jsonl, logs/ and — unless ``checked=False`` —
a results.json consistent with the anomalies it planted). It is vectorised with numpy so that
a 10M-write run is written in well under a minute.

    python -m tests.support.synthetic OUT_DIR [--writes N] [--invalid]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contract.anomalies import ANOMALY_KINDS

from . import synthetic_cluster as cluster
from . import synthetic_history as hist
from .tables import write_dataset, write_events

T0_NS = 1_795_339_800_000_000_000  # 2026-11-22T09:30:00Z


@dataclass
class PlannedFault:
    """A fault the synthetic run records: kind (a :data:`contract.faults.FAULTS` name), target
    node ids, start and end in seconds into the workload (end None: never healed)."""

    kind: str
    targets: list[int]
    start_s: float
    end_s: float | None


@dataclass
class SyntheticSpec:
    """What to synthesise. Anomaly counts are planted exactly and reported in results.json."""

    scenario: str = "safe-config-chaos"
    writes: int = 20_000
    partitions: int = 3
    producers: int = 2
    brokers: int = 3
    duration_s: float = 60.0
    seed: int = 7
    kafka_version: str = "4.1.1"
    acks: str = "all"
    unclean: bool = False
    min_insync: int = 2
    idempotence: bool = True
    faults: list[PlannedFault] = field(
        default_factory=lambda: [
            PlannedFault("kill", [2], 12.0, 20.0),
            PlannedFault("pause", [3], 30.0, 38.0),
            PlannedFault("partition", [1], 45.0, 52.0),
        ]
    )
    lost: int = 0
    unseen: int = 0
    duplicate: int = 0
    inconsistent: int = 0
    divergence: int = 0
    consumer: bool = True  # c0 also reads partition 0 while the workload runs
    checked: bool = True  # write results.json
    valid: bool | str | None = None  # None: derived from the planted anomalies
    timeseries: bool = False  # add results["timeseries"] in the checker's form
    part_rows: int = 500_000
    started_at: str = "2026-11-22T09:30:00Z"
    t0_ns: int = T0_NS


def write_synthetic_run(spec: SyntheticSpec, run_dir: Path) -> Path:
    """Write a complete synthetic run directory at ``run_dir`` and return it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "history").mkdir(exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    plan = hist.plan_times(spec)
    writes = hist.make_writes(spec, plan, rng)
    truth = hist.plant_anomalies(spec, plan, writes, rng)
    write_dataset(run_dir / "history/writes.parquet", writes.table(), spec.part_rows)
    write_dataset(run_dir / "history/reads.parquet", truth.reads, spec.part_rows)
    write_dataset(
        run_dir / "history/observations.parquet", cluster.make_observations(spec, plan), 200_000
    )
    events = cluster.make_events(plan, truth.drain_complete, drain_targets(spec, writes))
    write_events(run_dir / "history/events.jsonl", events)
    (run_dir / "run.json").write_text(json.dumps(_run_json(spec), indent=2))
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    for b in range(1, spec.brokers + 1):
        (logs / f"broker-{b}.log").write_text(f"[synthetic] broker {b} log\n")
    (logs / "kafka-chaos.log").write_text("[synthetic] framework log\n")
    if spec.checked:
        results = make_results(spec, plan, writes, truth)
        (run_dir / "results.json").write_text(json.dumps(results, indent=2))
    return run_dir


def drain_targets(spec: SyntheticSpec, w: hist.Writes) -> dict[str, int]:
    """The end offsets the drain aimed at: one past the last acknowledged offset of each
    partition (keyed ``"chaos:<partition>"``, as ``workloads/drain.py`` writes them)."""
    ends = np.zeros(spec.partitions, dtype="int64")
    acked = w.offset >= 0
    np.maximum.at(ends, w.partition[acked], w.offset[acked] + 1)
    return {f"chaos:{p}": int(ends[p]) for p in range(spec.partitions)}


def make_results(
    spec: SyntheticSpec, plan: hist.Plan, w: hist.Writes, truth: hist.Truth
) -> dict[str, Any]:
    """results.json as the checker would write it for exactly the planted anomalies."""
    lost_allowed = spec.acks in ("0", "1") or spec.unclean or spec.min_insync < 2
    def faults_at(ts: int) -> list[dict[str, Any]]:
        """Fault attribution in the checker's form (checkers/attribution.py)."""
        return [{"kind": k, "targets": list(ts_), "start_ns": a, "end_ns": b}
                for k, ts_, a, b in plan.faults if a <= ts <= (b or plan.end)]

    def write_examples(idx: np.ndarray, **extra: Any) -> list[dict[str, Any]]:
        return [{"producer": int(w.producer[i]), "seq": int(w.seq[i]), "topic": "chaos",
                 "partition": int(w.partition[i]), "acked_offset": int(w.offset[i]),
                 "outcome": "ok", "complete_ns": int(w.complete[i]),
                 "faults_at_ack": faults_at(int(w.complete[i])),
                 "summary": f"record producer={w.producer[i]} seq={w.seq[i]} was acknowledged "
                            f"at offset {w.offset[i]} of chaos-{w.partition[i]}",
                 **extra} for i in idx[:32]]

    dup_ex = [
        {**write_examples(np.array([i]))[0], "read_offsets": [int(w.offset[i]), int(o)]}
        for i, o in zip(truth.duplicate[:32], truth.dup_offsets[:32], strict=True)
    ]
    inc_ex = [{"topic": "chaos", "partition": x["partition"], "offset": x["offset"],
               "records": [{"producer": x[r][0], "seq": x[r][1], "valid": True}
                           for r in ("drain", "c0")]}
              for x in truth.inconsistent[:32]]
    counts = {"lost": (len(truth.lost), lost_allowed, write_examples(truth.lost)),
              "unseen": (len(truth.unseen), False, write_examples(truth.unseen)),
              "duplicate": (len(truth.duplicate), not spec.idempotence, dup_ex),
              "inconsistent-offset": (len(truth.inconsistent), False, inc_ex),
              "divergence": (len(truth.divergence), False, truth.divergence[:32])}
    anomalies: dict[str, Any] = {}
    for kind in ANOMALY_KINDS:
        count, allowed, examples = counts.get(kind, (0, kind in ("duplicate", "reorder")
                                                     and not spec.idempotence, []))
        anomalies[kind] = {"count": count, "allowed": allowed, "examples": examples}
    violated = any(a["count"] and not a["allowed"] for k, a in anomalies.items()
                   if k != "unseen")
    valid: Any = spec.valid if spec.valid is not None else (
        False if violated else "unknown" if truth.unseen.size else True)
    outcome_counts = np.bincount(w.outcome, minlength=3)
    duration = (plan.work1 - plan.work0) / 1e9
    cfg = f"acks={spec.acks}, min.insync.replicas={spec.min_insync}, " \
          f"unclean={'true' if spec.unclean else 'false'}"
    results: dict[str, Any] = {
        "valid": valid,
        "anomalies": anomalies,
        "stats": {"writes": {"ok": int(outcome_counts[0]), "fail": int(outcome_counts[1]),
                             "info": int(outcome_counts[2])},
                  "reads": truth.reads.num_rows, "drain_complete": truth.drain_complete,
                  "duration_s": duration, "ack_rate_per_s": round(outcome_counts[0] / duration, 1),
                  "unavailable_s": 0.6 * len(plan.faults)},
        "guarantees": {
            "lost": ("allowed: " if lost_allowed else "forbidden: ") + cfg,
            "unseen": "cannot be decided: the drain did not read the partition completely",
            "duplicate": "allowed: idempotence off" if not spec.idempotence
            else "forbidden: enable.idempotence=true",
            "reorder": "allowed: idempotence off" if not spec.idempotence
            else "forbidden: enable.idempotence=true",
            "divergence": "never allowed",
            "inconsistent-offset": "never allowed",
        },
        "checker": {"engine": "synthetic", "master": "none", "seconds": 0.0},
    }
    if spec.timeseries:
        results["timeseries"] = checker_timeseries(w, int(w.invoke.min()))
    return results


def checker_timeseries(w: hist.Writes, t0: int) -> dict[str, Any]:
    """Per-second outcomes and ok-latency percentiles, shaped as checkers/stats.py writes them
    (only non-empty buckets, rows under "points")."""
    when = np.where(w.complete >= 0, w.complete, w.invoke)
    bucket = (when - t0) // 1_000_000_000
    points = []
    for b in np.unique(bucket):
        sel = bucket == b
        ok = sel & (w.outcome == 0)
        lat = (w.complete[ok] - w.invoke[ok]) / 1e6
        pct = np.percentile(lat, [50, 99]) if len(lat) else [None, None]
        points.append({
            "t_s": float(b), "ok": int(ok.sum()), "fail": int((sel & (w.outcome == 1)).sum()),
            "info": int((sel & (w.outcome == 2)).sum()), "reads": 0,
            "latency_p50_ms": None if pct[0] is None else round(float(pct[0]), 3),
            "latency_p99_ms": None if pct[1] is None else round(float(pct[1]), 3),
            "latency_max_ms": round(float(lat.max()), 3) if len(lat) else None,
        })
    return {"t0_ns": t0, "bucket_s": 1.0, "columns": list(points[0]) if points else [],
            "points": points}


def _run_json(spec: SyntheticSpec) -> dict[str, Any]:
    return {
        "scenario": spec.scenario,
        "run_id": spec.started_at.replace("-", "").replace(":", ""),
        "started_at": spec.started_at,
        "seed": spec.seed,
        "cluster": {"brokers": spec.brokers, "controllers": "combined",
                    "kafka_version": spec.kafka_version,
                    "image": f"kafka-chaos/kafka:{spec.kafka_version}-synthetic"},
        "workload": {"topic": "chaos", "partitions": spec.partitions,
                     "producers": spec.producers,
                     "rate": round(spec.writes / spec.duration_s / spec.producers),
                     "duration_s": spec.duration_s, "record_size": 100,
                     "consumers": [{"id": "c0", "mode": "assign", "partitions": [0]}]
                     if spec.consumer else [],
                     "transactions": {"enabled": False}},
        "faults": {"kinds": sorted({f.kind for f in spec.faults}), "interval_s": 10,
                   "schedule": "random"},
        "broker_config": {},
        "topic_config": {"replication.factor": min(3, spec.brokers),
                         "min.insync.replicas": spec.min_insync,
                         "unclean.leader.election.enable": spec.unclean},
        "producer_config": {"acks": spec.acks, "enable.idempotence": spec.idempotence},
        "consumer_config": {"isolation.level": "read_committed"},
        "versions": {"kafka": spec.kafka_version, "confluent_kafka": "2.16.1",
                     "librdkafka": "2.12.0", "spark": "4.0.1", "kafka_chaos": "0.1.0",
                     "python": "3.11.7"},
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: write one synthetic run directory."""
    ap = argparse.ArgumentParser(prog="python -m tests.support.synthetic")
    ap.add_argument("out", type=Path)
    ap.add_argument("--writes", type=int, default=20_000)
    ap.add_argument("--invalid", action="store_true", help="plant forbidden anomalies")
    args = ap.parse_args(argv)
    spec = SyntheticSpec(writes=args.writes, duration_s=max(60.0, args.writes / 5000))
    if args.invalid:
        spec.acks, spec.lost, spec.duplicate, spec.inconsistent = "1", 40, 5, 3
    print(write_synthetic_run(spec, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
