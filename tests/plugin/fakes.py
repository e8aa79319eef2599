"""Run directories written by hand for the plugin's tests, and a runner that makes them.

The fake runner stands in for the orchestrator (through the plugin's ``chaos_runner``
fixture) so the plugin's wiring is tested in milliseconds: it writes what a real run would
leave for the plugin to read (run.json, results.json, report.html), with anomalies that
follow from the configuration the plugin built, the way Kafka's guarantees would:
acks=0/1 loses 5 acknowledged writes (allowed), and seed 13 plants a forbidden divergence.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from contract.anomalies import ANOMALY_KINDS as KINDS


def write_run(run_dir: Path, *, counts: dict[str, int] | None = None,
              allowed: set[str] = frozenset(), valid: Any = None, acked: int = 1000,
              run: dict[str, Any] | None = None, expectations: dict[str, Any] | None = None,
              ) -> Path:
    """A checked run directory: ``valid`` follows from counts and allowed unless given."""
    counts = counts or {}
    (run_dir / "history").mkdir(parents=True, exist_ok=True)
    anomalies = {k: {"count": counts.get(k, 0), "allowed": k in allowed, "examples": []}
                 for k in KINDS}
    if valid is None:
        valid = not any(a["count"] and not a["allowed"] for a in anomalies.values())
    results: dict[str, Any] = {
        "valid": valid, "anomalies": anomalies,
        "stats": {"writes": {"ok": acked, "fail": 0, "info": 0}, "reads": acked,
                  "drain_complete": True, "duration_s": 1.0},
    }
    if expectations is not None:
        results["expectations"] = expectations
    (run_dir / "run.json").write_text(json.dumps(run or {"scenario": "hand-written"}))
    (run_dir / "results.json").write_text(json.dumps(results))
    (run_dir / "report.html").write_text("<html>report</html>")
    return run_dir


def fake_runner(cfg: Any, scenario: Any) -> Any:
    """A ``chaos_runner``: a run directory as the configuration implies, no cluster."""
    from chaos.plugin_result import ChaosResult
    from runner.rundir import new_run_dir

    run_dir = new_run_dir(cfg.out, cfg.scenario)
    counts = {"lost": 5 if cfg.acks in ("0", "1") or cfg.unclean else 0}
    if cfg.seed == 13:
        counts["divergence"] = 2
    options = {k: v for k, v in asdict(cfg).items()}
    write_run(run_dir, counts=counts,
              allowed={"lost"} if counts["lost"] else set(),
              run={"scenario": cfg.scenario, "options": options,
                   "scenario_object": scenario.name if scenario else None})
    if cfg.seed == 99:  # a run that failed before anything was checked
        (run_dir / "results.json").unlink()
        return ChaosResult(run_dir, None, error="ClusterError: no Docker engine")
    return ChaosResult.from_run_dir(run_dir)
