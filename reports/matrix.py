"""``render_matrix(folder)``: every run below a folder → ``index.html``.

A grid of scenario (rows) × configuration (columns), each cell coloured by the verdict of its
latest run, with counts of verdicts and, for repeated runs of the same cell (nightly), the trend
over time as a strip of coloured marks linking to each run's report. Only the configuration
settings that differ between runs become column headings; the ones all runs share are listed
once above the grid.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.results import shape_problem

from .datasets import load_json
from .findings import build_findings
from .page import render_template, write_atomic
from .run_report import ReportError, render_run
from .summary import settings

log = logging.getLogger(__name__)

# The settings a matrix column is made of, by their label in summary.settings().
DIMENSIONS = ("Kafka version", "brokers", "replication.factor", "min.insync.replicas",
              "unclean.leader.election", "acks", "enable.idempotence", "transactions", "faults",
              "client", "librdkafka")
MAX_TREND = 40


@dataclass
class RunEntry:
    """One run as the matrix shows it."""

    path: Path
    scenario: str
    started: str
    config: dict[str, str]
    verdict: str
    violations: int
    lost: int
    unseen: int
    acked: int
    kinds: str  # "lost 12, duplicate 3" — the kinds with a count
    link: str | None
    error: str = ""


@dataclass
class Cell:
    """The runs of one scenario × configuration, oldest first."""

    runs: list[RunEntry] = field(default_factory=list)

    @property
    def latest(self) -> RunEntry:
        return self.runs[-1]

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.verdict for r in self.runs)

    @property
    def trend(self) -> list[RunEntry]:
        return self.runs[-MAX_TREND:]


def find_runs(folder: Path) -> list[Path]:
    """Run directories below ``folder`` (those holding a run.json), each once.

    Symlinks such as ``runs/latest`` are not followed, so the newest run is not listed twice.
    """
    found: dict[Path, Path] = {}
    for root, _dirs, files in os.walk(folder, followlinks=False):
        if "run.json" in files:
            p = Path(root)
            found.setdefault(p.resolve(), p)
    return sorted(found.values())


def _verdict(results: dict[str, Any] | None) -> str:
    if results is None:
        return "unknown"
    v = results.get("valid")
    return "valid" if v is True else "invalid" if v is False else "unknown"


def _entry(run_dir: Path, index_dir: Path, render_missing: bool) -> RunEntry | None:
    run = load_json(run_dir / "run.json")
    if run is None:
        return None
    results = load_json(run_dir / "results.json")
    if results is not None and (problem := shape_problem(results)) is not None:
        raise ValueError(f"results.json is damaged: {problem}")
    anomalies = (results or {}).get("anomalies") or {}
    report = run_dir / "report.html"
    error = ""
    if render_missing and not report.exists():
        try:
            render_run(run_dir)
        except (ReportError, OSError, ValueError) as e:  # one broken run must not hide the rest
            error = f"report failed: {e}"
            log.warning("cannot render %s: %s", run_dir, e)
    config = {s.name: s.value for s in settings(run) if s.name in DIMENSIONS}
    counted = {k: int((a or {}).get("count") or 0) for k, a in anomalies.items()}
    return RunEntry(
        path=run_dir,
        scenario=str(run.get("scenario") or run_dir.parent.name),
        started=str(run.get("started_at") or run.get("run_id") or run_dir.name),
        config=config,
        verdict=_verdict(results),
        # unseen is undecided (it makes a verdict unknown), not a violation.
        violations=sum(c for k, c in counted.items()
                       if c and k != "unseen" and not (anomalies[k] or {}).get("allowed")),
        unseen=counted.get("unseen", 0),
        lost=counted.get("lost", 0),
        acked=int((((results or {}).get("stats") or {}).get("writes") or {}).get("ok") or 0),
        kinds=", ".join(f"{k} {c:,}" for k, c in counted.items() if c),
        link=os.path.relpath(report, index_dir).replace(os.sep, "/") if report.exists()
        else None,
        error=error,
    )


def build_matrix(folder: Path, render_missing: bool = True) -> dict[str, Any]:
    """The template context of the matrix page for ``folder``."""
    entries: list[RunEntry] = []
    damaged: list[tuple[str, str]] = []  # (run directory, what is wrong): named on the page
    for p in find_runs(folder):
        try:
            if (e := _entry(p, folder, render_missing)) is not None:
                entries.append(e)
        except (TypeError, KeyError, AttributeError, ValueError, IndexError) as err:
            # one damaged run must not abort the page of the others
            log.warning("skipping %s: %s", p, err)
            damaged.append((os.path.relpath(p, folder), f"{type(err).__name__}: {err}"))
    entries.sort(key=lambda e: e.started)
    varying = [d for d in DIMENSIONS if len({e.config.get(d) for e in entries}) > 1]
    common = [(d, entries[0].config.get(d, "?")) for d in DIMENSIONS if d not in varying] \
        if entries else []

    def column_of(e: RunEntry) -> tuple[str, ...]:
        return tuple(e.config.get(d, "?") for d in varying)

    columns = sorted({column_of(e) for e in entries})
    scenarios = sorted({e.scenario for e in entries})
    cells: dict[tuple[str, tuple[str, ...]], Cell] = {}
    for e in entries:
        cells.setdefault((e.scenario, column_of(e)), Cell()).runs.append(e)
    totals = Counter(e.verdict for e in entries)
    return {
        "folder": folder,
        "title": f"kafka-chaos matrix · {folder.resolve().name}",
        "entries": list(reversed(entries)),  # newest first in the list of runs
        "damaged": damaged,
        "varying": varying,
        "common": common,
        "columns": columns,
        "scenarios": scenarios,
        "cells": cells,
        "totals": totals,
        "explore": build_findings(folder),
        "generated_at": datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def render_matrix(folder: str | os.PathLike[str], render_missing: bool = True) -> Path:
    """Write ``index.html`` for every run below ``folder`` and return its path.

    Runs without a report.html get one first (``render_missing``), so every link works.
    Raises ``ReportError`` when ``folder`` is not a directory.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ReportError(f"{folder} is not a directory")
    ctx = build_matrix(folder, render_missing)
    return write_atomic(folder / "index.html", render_template("matrix.html.j2", ctx))
