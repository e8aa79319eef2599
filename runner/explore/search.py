"""``kafka-chaos explore``: back-to-back runs over seeded draws of the configuration space
(runner.explore.space) within a time budget. Each draw is a normal run directory below the
explore folder; a run with violations is a finding, saved with its schedule as it happened
(replay.toml beside it). ``explore.json`` is rewritten after every run, so an explore that
is stopped or crashes keeps what it found; Ctrl-C ends the current run after healing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.atomic_files import write_atomic
from contract.explore import EXPLORE_FILE, Explore, ExploreRun
from runner.config import RunConfig, RunConfigError
from runner.explore.as_happened import read_run
from runner.explore.findings import label, violations
from runner.explore.space import Space, covered, draw
from runner.explore.trials import REPLAY_FILE, save_replay

#: What a run costs besides its workload (cluster start, heal, drain, check): the first
#: run's estimate, before one has been timed.
OVERHEAD_S = 150.0


@dataclass
class ExploreResult:
    folder: Path
    runs: int
    findings: int
    stopped: str


def _left(deadline: float) -> str:
    s = max(0, int(deadline - time.monotonic()))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _brief(opts: dict[str, Any]) -> str:
    return (f"kafka {opts['kafka_version']} {opts['client']} acks={opts['acks']} "
            f"min.insync={opts['min_insync']}/{opts['replication_factor']} "
            f"brokers={opts['brokers']} faults={','.join(opts['faults'])}")


def explore(folder: Path, seed: int, budget_s: float, space: Space,
            max_runs: int | None = None) -> ExploreResult:
    """Runs draws 0, 1, … until the budget has no room for another run (or ``max_runs``)."""
    from runner.bug_runs import run_once

    folder.mkdir(parents=True, exist_ok=True)
    doc: Explore = {"seed": seed, "budget_s": budget_s,
                    "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "runs": [], "covered": {}, "stopped": "running"}
    deadline = time.monotonic() + budget_s
    estimate = space.duration + OVERHEAD_S
    recent: list[float] = []  # the last runs' lengths: the next one's estimate
    stopped = "the time budget is spent"
    findings = 0
    index = 0
    try:
        while True:
            if max_runs is not None and index >= max_runs:
                stopped = f"{max_runs} run(s) done"
                break
            if time.monotonic() + estimate > deadline:
                break
            opts = draw(seed, index, space)
            print(f"explore: run {index + 1} · {findings} finding(s) · {_left(deadline)} "
                  f"left · {_brief(opts)}")
            t = time.monotonic()
            ran = run_once(RunConfig(scenario="explore", out=str(folder), **opts), None)
            seconds = time.monotonic() - t
            recent = [*recent[-2:], seconds]
            estimate = max(recent)  # a first run that built its client counts only a while
            # an interrupted run is listed unchecked (valid None): its directory is kept
            found = {} if ran.interrupted else violations(ran.results)
            entry: ExploreRun = {
                "index": index,
                "run_dir": str(ran.run_dir.relative_to(folder)) if ran.run_dir else None,
                "options": opts, "valid": (ran.results or {}).get("valid"),
                "violations": found, "seconds": round(seconds, 1)}
            if (ran.results or {}).get("unknown_reasons"):
                entry["unknown_reasons"] = list(ran.results["unknown_reasons"])  # type: ignore[index]
            doc["runs"].append(entry)
            if ran.interrupted:
                stopped = "interrupted"
                break
            if found and ran.run_dir is not None:
                findings += 1
                _save_finding(ran.run_dir)
                print(f"explore: finding: {label(list(found))} ({ran.run_dir})")
            index += 1
            _write(folder, doc, stopped="running")
    except KeyboardInterrupt:
        stopped = "interrupted"
    except BaseException as e:
        stopped = f"failed: {type(e).__name__}: {e}"
        raise
    finally:
        _write(folder, doc, stopped=stopped)
    print(f"explore: {len(doc['runs'])} run(s), {findings} finding(s); stopped: {stopped}; "
          f"index: {folder / EXPLORE_FILE} (kafka-chaos report {folder})")
    return ExploreResult(folder, len(doc["runs"]), findings, stopped)


def _save_finding(run_dir: Path) -> None:
    try:
        save_replay(read_run(run_dir).replay_doc(), run_dir / REPLAY_FILE)
    except (RunConfigError, OSError) as e:  # the finding stays, without its replay file
        print(f"explore: no {REPLAY_FILE} for {run_dir}: {e}")


def _write(folder: Path, doc: Explore, stopped: str) -> None:
    doc["stopped"] = stopped
    doc["covered"] = covered([r["options"] for r in doc["runs"]])
    write_atomic(folder / EXPLORE_FILE, json.dumps(doc, indent=2, default=str))
