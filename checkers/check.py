"""``check_run``: a run directory in, results.json out (DESIGN.md §3–§5)."""

from __future__ import annotations

import contextlib
import json
import os
import time
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.anomalies import ANOMALY_KINDS, DEFINITIONS, UNITS
from contract.results import RESULTS_FILE
from contract.settings import SAIL_MASTER, Settings

from . import guarantees
from .append_bound import acknowledged
from .checks import CHECKS, STATS_ORDER
from .collect import Findings, collect_findings
from .combine import Check, Combined
from .context import CheckContext, Drain, drain_state, load_context
from .engines import keep, master_of, release, release_shared, sail_version
from .identity import (
    IdentityInputs,
    identity_anomalies,
    identity_table,
    reorder_anomalies,
    topic_id,
)
from .known import EXPLAINS, KnownInputs, known_bug_column
from .known import entries as known_entries
from .positions import Rebalances, position_anomalies
from .runfiles import RunDir, is_uri
from .session import SMALL_HISTORY_BYTES, build_session, jvm_gone, spark_log
from .torn import examinable, torn_transactions
from .truncation_reset import proven_resets
from .verdict import expectations

RESULTS = RESULTS_FILE
#: A local check of a history below this many bytes (~50k writes) uses one shuffle partition.
ONE_PARTITION_BYTES = 2 * 2**20
#: ... and below this many bytes (~200k writes) runs without generated code.
INTERPRETED_BYTES = 8 * 2**20


def _empty_anomalies(settings: Settings) -> dict[str, dict[str, Any]]:
    rules = guarantees.rules(settings)
    return {k: {"count": 0, "allowed": rules[k].allowed, "why": rules[k].why, "unit": UNITS[k],
                "definition": DEFINITIONS[k], "known_bugs": {}, "examples": []}
            for k in ANOMALY_KINDS}


def find_anomalies(writes: DataFrame, reads: DataFrame, inputs: IdentityInputs,
                   known: KnownInputs | None = None,
                   rebalances: Rebalances | None = None) -> Findings:
    """Every anomaly of the history tables except divergence: exact counts and examples
    (the row checks of checkers/checks.py, without a run directory).

    Three exchanges in all: identity (writes + reads), position (reads), and reorder (the
    torn-transaction check of a transactional run adds a small one of its few writes).
    """
    # The identity table feeds two consumers (the flags and the reorder window); caching it
    # keeps Spark from computing the identity exchange and aggregations twice.
    ident = keep(identity_table(writes, reads, inputs))
    acks = acknowledged(writes, topic_id(inputs.topics, F.col("topic")))
    try:
        return collect_findings([
            identity_anomalies(ident, inputs, acks), reorder_anomalies(ident, inputs, acks),
            position_anomalies(reads, inputs.partitions, inputs.topics, inputs.readers,
                               rebalances,
                               groups={r: inputs.settings.group(r) for r in inputs.readers}),
            *([torn_transactions(ident, writes, inputs)] if examinable(inputs) else []),
        ], known_bug_column(known or KnownInputs(inputs.settings)),
            inputs.settings.accept_known,
            late=lambda rows, kinds: proven_resets(rows, reads, writes, kinds))
    finally:
        release(ident)
        release_shared()


class _Clock:
    """Seconds per checker phase (results.checker.phases): where the time goes."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = round(now - self._last, 3)
        self._last = now


def run_checks(ctx: CheckContext, checks: Sequence[Check], clock: _Clock) -> Combined:
    """Run the checks in order on the shared context and combine their results."""
    combined = Combined()
    try:
        for check in checks:
            result = check.run(ctx)
            ctx.rows.extend(result.rows)
            combined.add(result)
            clock.lap(check.name)
    finally:
        ctx.release()
    return combined


def _analyse(spark: SparkSession, run: RunDir, master: str) -> dict[str, Any]:
    clock = _Clock()
    ctx = load_context(spark, run)
    settings = ctx.settings
    clock.lap("load")
    found = run_checks(ctx, CHECKS, clock)
    anomalies = {k: found.anomalies[k] for k in ANOMALY_KINDS}
    stats = {k: found.stats[k] for k in STATS_ORDER if k in found.stats}
    stats.update({k: v for k, v in found.stats.items() if k not in stats})
    valid = found.valid
    rules = guarantees.rules(settings)
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
                    "spark_version": spark.version,
                    **({"sail_version": sail_version()} if master == SAIL_MASTER else {})},
    }
    if found.unknown:
        results["unknown_reasons"] = found.unknown
    if "timeseries" in found.extra:
        results["timeseries"] = found.extra["timeseries"]
    results["checker"]["phases"] = clock.phases
    if settings.expect:
        results["expectations"] = expectations(settings.expect, valid, anomalies, stats)
    if "pipeline" in found.extra:
        results["pipeline"] = found.extra["pipeline"]
    if found.violations:
        results["violations"] = found.violations
    if "mechanism" in found.extra:
        results["mechanism"] = found.extra["mechanism"]
    return results


def one_line(exc: BaseException) -> str:
    """``Type: message`` in one line: a Py4J error's text is the call, then the Java
    exception, then its stack; the Java exception's line is the message."""
    lines = [ln.strip().lstrip(": ").strip() for ln in str(exc).splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        lines = lines[1:]
    message = lines[0] if lines else ""
    return f"{type(exc).__name__}: {message[:400]}"


def _error_results(exc: BaseException, master: str | None) -> dict[str, Any]:
    gone = jvm_gone()
    error = one_line(exc) + (f" ({gone})" if gone else "")
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
        "error": error,
        "traceback": f"{traceback.format_exc(limit=8)}\n{exc}"[-20_000:],
        "unknown_reasons": [f"the checker failed: {error}"],
    }


def _history_bytes(run: RunDir) -> int | None:
    """The size of a local run's history (None for a remote run or when unreadable)."""
    hist = run.local_path("history")
    if hist is None or not os.path.isdir(hist):
        return None
    total = 0
    try:
        for base, _, files in os.walk(hist):
            total += sum(os.path.getsize(os.path.join(base, f)) for f in files)
    except OSError:  # a file renamed under us: not worth failing the check for
        return None
    return total


def small_check_conf(size: int | None, master: str) -> dict[str, str]:
    """Session settings for checking a local history of ``size`` bytes (restored after).

    Below ONE_PARTITION_BYTES one shuffle partition: every stage's tasks cost more to
    schedule than to run on a few MB (~20% of a small check); and no adaptive execution:
    with one partition there is nothing to coalesce or split, and planning each stage again
    once the one before has run cost ~20% of a warm tiny check (2.24 s -> 1.81 s). Below
    INTERPRETED_BYTES no generated code: compiling a check's ~25 stages costs more than
    interpreting up to a few hundred thousand rows (a warm 40-write check 5.8 s -> 3.5 s,
    100k writes 11 s -> 9 s; about even at 400k writes). ``factoryMode`` is an internal
    Spark setting (its own tests use it); a Spark without it ignores the key and only
    whole-stage code is turned off."""
    if size is None or not master.startswith("local"):
        return {}
    conf: dict[str, str] = {}
    if size < ONE_PARTITION_BYTES:
        conf["spark.sql.shuffle.partitions"] = "1"
        conf["spark.sql.adaptive.enabled"] = "false"
    if size < INTERPRETED_BYTES:
        conf["spark.sql.codegen.wholeStage"] = "false"
        conf["spark.sql.codegen.factoryMode"] = "NO_CODEGEN"
    return conf


@contextlib.contextmanager
def _session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """``conf`` set on the session while a check runs; the previous values come back."""
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


#: The most of a check's share of the JVM's log that is read and copied.
SPARK_LOG_MAX_BYTES = 4 * 2**20


def _size(path: str | None) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


def _spark_log_share(run: RunDir, log: str | None, mark: int, results: dict[str, Any],
                     write: bool) -> None:
    """The lines the local JVM logged during the check (its errors, the tasks it lost and
    retried): counted in ``checker.spark_log`` and, for a local run, copied to
    ``logs/checker-spark.log``; the terminal shows one line (runner/verdict.py)."""
    if not log or _size(log) <= mark:
        return
    with open(log, "rb") as fh:
        fh.seek(mark)
        text = fh.read(SPARK_LOG_MAX_BYTES).decode("utf-8", errors="replace")
    lines = text.splitlines()
    results["checker"]["spark_log"] = {
        "errors": sum(" ERROR " in ln for ln in lines),
        "lost_tasks": sum("Lost task" in ln for ln in lines),
        "file": "logs/checker-spark.log"}
    if write and run.local is not None:
        run.write_text("logs/checker-spark.log", text)


def check_run(run_dir: str | os.PathLike[str], spark_master: str | None = None,
              write_results: bool = True) -> dict[str, Any]:
    """Check one run directory: write ``results.json`` into it (unless ``write_results`` is
    false) and return it.

    ``run_dir`` is a local path or a URI Spark can read (``hdfs://``, ``s3a://``, …).
    ``spark_master`` defaults to the active session's master, else ``local[2]``. Never
    raises for a bad history: errors give ``valid: "unknown"`` with an ``error`` field.
    """
    started = time.monotonic()
    run = RunDir(os.fspath(run_dir))
    spark: SparkSession | None = None
    log, mark = spark_log(), _size(spark_log())
    try:
        size = _history_bytes(run)
        spark = build_session(spark_master,
                              small_input=size is not None and size < SMALL_HISTORY_BYTES)
        master = master_of(spark)
        with _session_conf(spark, small_check_conf(size, master)):
            results = _analyse(spark, run, master)
    except Exception as exc:  # the judge reports its own failure instead of crashing a run
        results = _error_results(exc, spark_master)
    results["checker"]["seconds"] = round(time.monotonic() - started, 3)
    _spark_log_share(run, log if log is not None else spark_log(), mark, results,
                     write_results)
    body = json.dumps(results, indent=2, sort_keys=False, default=str)
    if not write_results or (spark is None and is_uri(run.root) and run.local is None):
        return results  # not asked for, or nowhere to write without Spark's filesystem
    run.write_text(RESULTS, body + "\n", spark)
    return results


__all__ = ["Drain", "check_run", "drain_state", "find_anomalies", "run_checks"]
