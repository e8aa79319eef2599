"""``check_run``: a run directory in, results.json out (DESIGN.md §3–§5)."""

from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from contract.anomalies import ANOMALY_KINDS, DEFINITIONS, UNITS
from contract.results import RESULTS_FILE
from contract.settings import Settings, settings_from_run

from . import guarantees
from .attribution import Attributor
from .collect import Findings, attach_reads, collect_findings
from .divergence import check_divergence
from .epochs import epoch_bumps
from .examples import build_example
from .history import (
    OBSERVATIONS_SCHEMA,
    READS_SCHEMA,
    WRITES_SCHEMA,
    Event,
    drain_end,
    load_table,
    parse_events,
    phase_window,
)
from .identity import IdentityInputs, identity_anomalies, identity_table, reorder_anomalies
from .known import EXPLAINS, KnownInputs, known_bug_column
from .known import entries as known_entries
from .observations import (
    PartitionHistory,
    collect_changes,
    power_loss_coverage,
    single_replica_power_losses,
)
from .positions import Rebalances, position_anomalies, rebalance_polls
from .proof import (
    divergence_status,
    fault_counts,
    faults_unknown,
    transaction_outcomes,
    transactions_unknown,
)
from .runfiles import RunDir, is_uri
from .session import build_session
from .stats import read_summary, timeseries, write_summary
from .verdict import expectations, mechanism, verdict

RESULTS = RESULTS_FILE


@dataclass(frozen=True)
class Drain:
    """How far the final drain got."""

    ended: bool
    flag: bool
    complete: list[str]
    incomplete: list[str]


def drain_state(events: list[Event], partitions: list[str], drained: dict[str, int]) -> Drain:
    """A partition is complete when the drain says so, or when it read up to end_offset-1."""
    end = drain_end(events)
    if end is None:
        return Drain(False, False, [], sorted(partitions))
    flag = bool(end.detail.get("complete"))
    ends = end.detail.get("end_offsets") or {}
    keys = sorted(set(partitions) | set(ends))
    complete: list[str] = []
    incomplete: list[str] = []
    for key in keys:
        ok = flag
        if not ok and key in ends:
            try:
                ok = drained.get(key, -1) >= int(ends[key]) - 1
            except (TypeError, ValueError):
                ok = False
        (complete if ok else incomplete).append(key)
    return Drain(True, flag, complete, incomplete)


def _empty_anomalies(settings: Settings) -> dict[str, dict[str, Any]]:
    rules = guarantees.rules(settings)
    return {k: {"count": 0, "allowed": rules[k].allowed, "why": rules[k].why, "unit": UNITS[k],
                "definition": DEFINITIONS[k], "known_bugs": {}, "examples": []}
            for k in ANOMALY_KINDS}


def find_anomalies(writes: DataFrame, reads: DataFrame, inputs: IdentityInputs,
                   known: KnownInputs | None = None,
                   rebalances: Rebalances | None = None) -> Findings:
    """Every anomaly of the history tables except divergence: exact counts and examples.

    Three exchanges in all: identity (writes + reads), position (reads), and reorder.
    """
    # The identity table feeds two consumers (the flags and the reorder window); caching it
    # keeps Spark from computing the identity exchange and aggregations twice.
    ident = identity_table(writes, reads, inputs).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return collect_findings([
            identity_anomalies(ident, inputs), reorder_anomalies(ident, inputs),
            position_anomalies(reads, inputs.partitions, inputs.topics, inputs.readers,
                               rebalances, inputs.power_loss_until),
        ], known_bug_column(known or KnownInputs(inputs.settings)),
            inputs.settings.accept_known)
    finally:
        ident.unpersist()


class _Clock:
    """Seconds per checker phase (results.checker.phases): where the time goes."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = round(now - self._last, 3)
        self._last = now


def _analyse(spark: SparkSession, run: RunDir, master: str) -> dict[str, Any]:
    clock = _Clock()
    text = run.read_text("run.json", spark)
    run_cfg: dict[str, Any] = json.loads(text) if text else {}
    settings = settings_from_run(run_cfg)
    events, bad_lines = parse_events(run.read_text("history/events.jsonl", spark))
    writes = load_table(spark, run, "writes", WRITES_SCHEMA)
    reads = load_table(spark, run, "reads", READS_SCHEMA)
    obs = load_table(spark, run, "observations", OBSERVATIONS_SCHEMA, absent_as_none=True)
    parts_n = int(spark.conf.get("spark.sql.shuffle.partitions") or "8")
    clock.lap("load")

    ws = write_summary(writes)
    rs = read_summary(reads)
    per_reader = rs.per_reader
    partitions = ws.partitions
    drain = drain_state(events, partitions, rs.drained)
    clock.lap("summaries")
    history, n_changes = collect_changes(obs) if obs is not None else (PartitionHistory([]), 0)
    power = power_loss_coverage(events, history, sorted(set(partitions) | set(drain.complete)),
                                settings.brokers)
    clock.lap("observations")

    topics = sorted(set(ws.topics) | set(rs.topics))
    bumps = epoch_bumps(writes) if settings.idempotence else {}
    single = single_replica_power_losses(events, history, sorted(power), settings.brokers)
    findings = find_anomalies(writes, reads, IdentityInputs(settings, drain.complete, power,
                                                            parts_n, topics,
                                                            sorted(per_reader), bumps),
                              KnownInputs(settings, single), rebalance_polls(events))
    clock.lap("anomalies")
    attach_reads(spark, reads, findings)
    clock.lap("example_reads")
    div = check_divergence(run, spark)
    div_status = divergence_status(run_cfg, events, div.checked, div.note)
    div.checked = div_status.checked
    clock.lap("divergence")

    rules = guarantees.rules(settings)
    attributor = Attributor(events, history)
    anomalies: dict[str, dict[str, Any]] = {}
    for kind in ANOMALY_KINDS:
        if kind == "divergence":
            count, excused, examples = div.count, 0, div.examples
        else:
            count = findings.counts.get(kind, 0)
            excused = findings.excused.get(kind, 0)
            examples = [build_example(kind, row, attributor, settings.accept_known)
                        for row in findings.examples.get(kind, [])]
        allowed, why, accepted = guarantees.decide(kind, count, excused, rules[kind],
                                                   findings.by_bug.get(kind),
                                                   settings.accept_known)
        entry: dict[str, Any] = {"count": count, "allowed": allowed, "why": why,
                                 "unit": UNITS[kind], "definition": DEFINITIONS[kind],
                                 "known_bugs": findings.known_bugs(kind)}
        if excused:
            entry["excused"] = excused
        if accepted:
            entry["accepted"] = accepted
        if kind == "divergence":
            entry["checked"] = div.checked
            if div_status.reason:
                entry["reason"] = div_status.reason
        entry["examples"] = examples
        anomalies[kind] = entry

    unknown: list[str] = []
    if not text:
        unknown.append("run.json is missing: the guarantee model assumed Kafka's defaults")
    if not drain.ended:
        unknown.append("the history has no drain end event: the final read did not finish")
    if ws.ok == 0:
        # A workload that never got an acknowledgement proves nothing about durability.
        unknown.append("no write was acknowledged: the run shows nothing about durability")
    if anomalies["unseen"]["count"]:
        unknown.append(f"{anomalies['unseen']['count']} acknowledged writes are unseen in "
                       f"partitions the drain did not read completely: {drain.incomplete[:20]}")
    if div_status.unknown:
        unknown.append(div_status.unknown)
    faults = fault_counts(events)
    if reason := faults_unknown(run_cfg, faults):
        unknown.append(reason)
    txns = transaction_outcomes(writes) if settings.transactional else None
    if txns is not None and (reason := transactions_unknown(True, txns)):
        unknown.append(reason)
    mech = None
    if settings.mechanism:
        mech = mechanism(settings.mechanism, events, history)
        if not mech["observed"]:
            unknown.append("the scenario's mechanism was not observed: "
                           + "; ".join(d["kind"] for d in mech["details"] if not d["observed"]))
    valid = verdict(anomalies, unknown)
    clock.lap("verdict")

    w_start, w_end = phase_window(events, "workload")
    t0 = w_start if w_start is not None else ws.first_ns
    t1 = w_end if w_end is not None else ws.last_ns
    duration = max(0.0, (t1 - t0) / 1e9) if t0 is not None and t1 is not None else 0.0
    series, longest, total = None, 0.0, 0.0
    if t0 is not None and t1 is not None:
        series, longest, total = timeseries(writes, reads, t0, max(t1, t0 + 1))
    stats: dict[str, Any] = {
        "writes": {"ok": ws.ok, "fail": ws.fail, "info": ws.info},
        "reads": sum(per_reader.values()),
        "reads_by_reader": per_reader,
        "drain_complete": drain.ended and not drain.incomplete,
        "drain": {"ended": drain.ended, "complete_flag": drain.flag,
                  "complete_partitions": drain.complete[:1000],
                  "incomplete_partitions": drain.incomplete[:1000]},
        "duration_s": round(duration, 3),
        "ack_rate_per_s": round(ws.ok / duration, 3) if duration > 0 else 0.0,
        "unavailable_s": longest,
        "unavailable_total_s": total,
        "errors": dict(sorted(ws.errors.items(), key=lambda kv: -kv[1])),
        "faults": faults.stats(),
        **({"transactions": txns} if txns is not None else {}),
        "divergence": {**div.stats(),
                       **({"reason": div_status.reason} if div_status.reason else {})},
        "partition_changes": n_changes,
        "power_loss_covered_partitions": sorted(power),
        "events": len(events),
        "events_unparsed_lines": bad_lines,
    }
    results: dict[str, Any] = {
        "valid": valid,
        "anomalies": anomalies,
        "stats": stats,
        "guarantees": {k: guarantees.guarantee_line(k, rules[k], settings.accept_known,
                                                    EXPLAINS) for k in ANOMALY_KINDS},
        "accepted_known": list(settings.accept_known),
        "known_bugs": known_entries({b for a in anomalies.values() for b in a["known_bugs"]}
                                    | set(settings.accept_known)),
        "checker": {"engine": "pyspark", "master": master, "seconds": 0.0,
                    "spark_version": spark.version},
    }
    if unknown:
        results["unknown_reasons"] = unknown
    if series is not None:
        results["timeseries"] = series
    clock.lap("stats")
    results["checker"]["phases"] = clock.phases
    if settings.expect:
        results["expectations"] = expectations(settings.expect, valid, anomalies, stats)
    if mech is not None:
        results["mechanism"] = mech
    return results


def _error_results(exc: BaseException, master: str | None) -> dict[str, Any]:
    anomalies = _empty_anomalies(Settings())
    for a in anomalies.values():
        a["checked"] = False
    return {
        "valid": "unknown",
        "anomalies": anomalies,
        "stats": {"writes": {"ok": 0, "fail": 0, "info": 0}, "reads": 0,
                  "drain_complete": False, "duration_s": 0.0, "ack_rate_per_s": 0.0,
                  "unavailable_s": 0.0},
        "guarantees": {k: v["why"] for k, v in anomalies.items()},
        "checker": {"engine": "pyspark", "master": master, "seconds": 0.0},
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": traceback.format_exc(limit=8),
        "unknown_reasons": [f"the checker failed: {type(exc).__name__}: {exc}"],
    }


def check_run(run_dir: str | os.PathLike[str], spark_master: str | None = None) -> dict[str, Any]:
    """Check one run directory: write ``results.json`` into it and return it.

    ``run_dir`` is a local path or a URI Spark can read (``hdfs://``, ``s3a://``, …).
    ``spark_master`` defaults to the active session's master, else ``local[2]``. Never
    raises for a bad history: errors give ``valid: "unknown"`` with an ``error`` field.
    """
    started = time.monotonic()
    run = RunDir(os.fspath(run_dir))
    spark: SparkSession | None = None
    try:
        spark = build_session(spark_master)
        master = str(spark.sparkContext.master)
        results = _analyse(spark, run, master)
    except Exception as exc:  # the judge reports its own failure instead of crashing a run
        results = _error_results(exc, spark_master)
    results["checker"]["seconds"] = round(time.monotonic() - started, 3)
    body = json.dumps(results, indent=2, sort_keys=False, default=str)
    if spark is None and is_uri(run.root) and run.local is None:
        return results  # nowhere to write without Spark's filesystem
    run.write_text(RESULTS, body + "\n", spark)
    return results


__all__ = ["check_run", "find_anomalies"]
