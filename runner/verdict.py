"""How a run's outcome is told on the terminal and as an exit code (DESIGN.md §5)."""

from __future__ import annotations

import sys
from typing import Any

from contract.exit_codes import missed_expectations
from runner.orchestrator import RunOutcome

_COLOURS = {True: "\033[32m", False: "\033[31m", "unknown": "\033[33m"}


def _paint(text: str, valid: Any) -> str:
    if not sys.stdout.isatty():
        return text
    return f"{_COLOURS.get(valid, '')}{text}\033[0m"


def checker_lines(res: dict[str, Any], run_dir: Any) -> list[str]:
    """One line each for a checker failure (results.json ``error``, one line already; the
    trace is in ``traceback``) and for what Spark logged during the check."""
    out = [f"checker failed: {res['error']}"] if res.get("error") else []
    spark = (res.get("checker") or {}).get("spark_log") or {}
    if spark.get("errors") or spark.get("lost_tasks"):
        out.append(f"checker: Spark logged {spark.get('errors', 0)} error(s) and "
                   f"{spark.get('lost_tasks', 0)} failed task(s) during the check: "
                   f"{run_dir}/{spark.get('file')}")
    return out


def print_verdict(outcome: RunOutcome) -> None:
    res = outcome.results or {}
    valid = res.get("valid", "unknown")
    label = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    counts = {k: v.get("count", 0) for k, v in (res.get("anomalies") or {}).items()
              if isinstance(v, dict) and v.get("count")}
    line = f"verdict: {label}"
    if counts:
        line += "  (" + ", ".join(f"{k}={n}" for k, n in sorted(counts.items())) + ")"
    if outcome.interrupted:
        line += "  [interrupted: history kept, not checked]"
    if outcome.error:
        line += f"  [run error: {outcome.error}]"
    print(_paint(line, valid))
    for miss in missed_expectations(res):
        print(_paint(f"expectation missed: {miss}", False))
    for line in checker_lines(res, outcome.run_dir):
        print(line)
    print(f"run directory: {outcome.run_dir}")
    if outcome.report:
        print(f"report: {outcome.report}")
