"""Warming the checker up while a run goes on: the Spark session, then one check of a tiny
literal history, so the run's own check finds Spark's classes loaded and the JIT warm.

On a 2-core machine a cold first check spends most of its time compiling, not checking
(~15 s for a 30k-write run cold, ~6 s warm); the tiny check costs about as much CPU, but
while the cluster starts instead of after the drain. Its plans have the same shape as a
real run's (same settings, same checks). Like every history below
``checkers.check.INTERPRETED_BYTES`` (a run of a few minutes), it is checked without
generated code, so it warms the interpreted path those runs take; a larger run's check
still compiles its own code.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contract.owners import owned_dir, sweep_owned_dirs
from contract.schemas import DRAIN_READER, READS_SCHEMA, WRITES_SCHEMA
from contract.settings import SAIL_MASTER

from .engines import master_of
from .session import build_session, session_running

_BASE = 1_700_000_000_000_000_000
_MS = 1_000_000
_TOPIC = "warm-up"


def _rows(schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def write_tiny_history(run_dir: Path, run_cfg: dict[str, Any] | None = None) -> None:
    """A tiny run directory with something for every common check: acknowledged, failed and
    unknown writes (some with an epoch-bump error), a consumer's reads, the drain's reads, a
    lost record, a duplicate, a kill fault and the run phases."""
    writes, reads = [], []
    offsets = {0: 0, 1: 0}
    for i in range(40):
        producer, seq, part = i % 2, i // 2, i % 2
        outcome = "ok" if i % 10 else ("info" if i % 20 else "fail")
        landed = outcome == "ok" or (outcome == "info" and i % 40)
        offset = offsets[part] if landed else None
        if landed:
            offsets[part] += 1
        t = _BASE + i * 10 * _MS
        writes.append({"op_id": i, "producer": producer, "seq": seq, "topic": _TOPIC,
                       "partition": part, "invoke_ns": t, "complete_ns": t + 3 * _MS,
                       "outcome": outcome, "offset": offset if outcome == "ok" else None,
                       "error": None if outcome == "ok" else "_MSG_TIMED_OUT"})
        if offset is not None and i != 17:  # write 17 is lost
            for reader in (DRAIN_READER, "c0"):
                reads.append({"reader": reader, "mode": "drain" if reader == DRAIN_READER
                              else "subscribe", "poll": i // 8, "read_ns": t + 50 * _MS,
                              "topic": _TOPIC, "partition": part, "offset": offset,
                              "producer": producer, "seq": seq, "valid": True})
    dup = dict(reads[0], offset=offsets[0], read_ns=_BASE + 900 * _MS)  # read twice
    reads.append(dup)
    end = _BASE + 1_000 * _MS
    events = [
        {"ts_ns": _BASE - 1, "kind": "phase", "phase": "start", "targets": [],
         "detail": {"name": "workload"}},
        {"ts_ns": _BASE + 100 * _MS, "kind": "kill", "phase": "start", "targets": [1],
         "detail": {"target": "1"}},
        {"ts_ns": _BASE + 200 * _MS, "kind": "kill", "phase": "end", "targets": [1],
         "detail": {"target": "1"}},
        {"ts_ns": end, "kind": "phase", "phase": "end", "targets": [],
         "detail": {"name": "workload"}},
        {"ts_ns": end + 1, "kind": "phase", "phase": "end", "targets": [],
         "detail": {"name": "drain", "complete": True,
                    "end_offsets": {f"{_TOPIC}:{p}": n + 1 for p, n in offsets.items()}}},
    ]
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    pq.write_table(_rows(WRITES_SCHEMA, writes), hist / "writes.parquet")
    pq.write_table(_rows(READS_SCHEMA, reads), hist / "reads.parquet")
    (hist / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    cfg = dict(run_cfg or {"cluster": {"brokers": 3},
                           "producer_config": {"acks": "all", "enable.idempotence": True}})
    cfg["scenario"] = "warm-up"
    (run_dir / "run.json").write_text(json.dumps(cfg))


def warm_check(master: str | None = None,
               run_cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check a tiny history once in this process (see the module docstring); its results."""
    from .check import check_run  # check imports this package's session module

    sweep_owned_dirs("warm-up")  # those of killed processes
    with _dirs_lock:
        if _exiting:
            return {}
        tmp = owned_dir("warm-up")
        _dirs.add(tmp)
        write_tiny_history(tmp, run_cfg)
    try:
        return check_run(tmp, master, write_results=False)
    finally:
        with _dirs_lock:
            _dirs.discard(tmp)
            shutil.rmtree(tmp, ignore_errors=True)


# A CLI run that ends while its warm-up still checks kills the daemon thread before
# warm_check's finally; this exit handler removes the directory then. The thread runs on
# while exit handlers do, so a directory is made (and its history written) only under the
# lock and never once the handler has run, and the check writes nothing into it (a suite
# once found one left: the thread had made it just as the process ended). Registered at
# import, before any warm-up thread exists.
_dirs_lock = threading.Lock()
_dirs: set[Path] = set()
_exiting = False


def _remove_at_exit() -> None:
    global _exiting
    with _dirs_lock:
        _exiting = True
        for d in _dirs:
            shutil.rmtree(d, ignore_errors=True)
        _dirs.clear()


atexit.register(_remove_at_exit)


class WarmUp(threading.Thread):
    """The warm-up thread; ``results`` holds the tiny check's results once it has run."""

    def __init__(self, master: str | None, run_cfg: dict[str, Any] | None, check: bool) -> None:
        super().__init__(name="kafka-chaos-spark-warm-up", daemon=True)
        self.master, self.run_cfg, self.check = master, run_cfg, check
        self.results: dict[str, Any] | None = None

    def run(self) -> None:
        if self.master == SAIL_MASTER:
            # Nothing to warm (no JVM, no code generation: its server starts in a few
            # seconds), and starting one here would set PySpark's Connect-mode variables in
            # os.environ from this thread while the run's own threads may be copying it.
            return
        # A failure is the run's check to report: it builds the session again.
        with contextlib.suppress(Exception):
            warm = session_running()  # an earlier check in this process warmed it already
            spark = build_session(self.master)
            # a cluster's executors may not see this machine's temp directory
            local = master_of(spark).startswith("local")
            if self.check and not warm and local:
                self.results = warm_check(self.master, self.run_cfg)


def warm_up(master: str | None = None, run_cfg: dict[str, Any] | None = None,
            check: bool = True) -> WarmUp:
    """Start the SparkSession in a background thread (and, with ``check``, warm it with one
    tiny check whose plans follow ``run_cfg``, a run.json-shaped dict, unless this process
    runs a SparkContext already: pytest and nightly check many runs in one JVM, warm after
    the first); return the thread.

    A run calls this while its cluster starts, so neither the JVM's start nor its first
    compilations are part of the check phase; ``build_session`` takes a lock, so a check
    that begins early waits for the session (and runs beside an unfinished warm-up check,
    which is harmless).
    """
    t = WarmUp(master, run_cfg, check)
    t.start()
    return t
