"""Running a replay file's scenario several times and counting the runs that reproduce a
finding (replay and shrink)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.atomic_files import write_atomic
from contract.results import RESULTS_FILE, shape_problem
from runner.config import RunConfig, RunConfigError, space_refusal
from runner.explore.as_happened import to_toml
from runner.explore.findings import reading_problem, reproduces
from scenarios.base import Scenario
from scenarios.toml_file import scenario_from_table

#: The file a replayable scenario is saved as beside the run it replays.
REPLAY_FILE = "replay.toml"


@dataclass
class Trials:
    """The runs of one scenario: their results (None: not checked)."""

    results: list[dict[str, Any] | None] = field(default_factory=list)
    interrupted: bool = False

    def hits(self, finding: Sequence[str]) -> int:
        return sum(reproduces(finding, r) for r in self.results)


def prepared(doc: dict[str, Any], out: str) -> tuple[Scenario, RunConfig]:
    """The scenario of a replay document and its run configuration, checked as a run checks
    it before anything starts (RunConfigError: one line)."""
    from runner.clients import ensure_driver

    scenario = scenario_from_table(doc["scenario"][0])
    cfg = scenario.run_config(out=out)
    cfg.validate()
    why = scenario.refusal(cfg) or space_refusal(cfg)
    if why is not None:
        raise RunConfigError(why)
    ensure_driver(cfg.client_spec, say=print)
    return scenario, cfg


def run_trials(doc: dict[str, Any], out: str, n: int, finding: Sequence[str],
               need: int | None = None,
               run: Callable[[RunConfig, Scenario], Any] | None = None) -> Trials:
    """Up to ``n`` runs of ``doc``'s scenario; with ``need``, it stops as soon as ``need``
    runs reproduced ``finding`` or can no longer. Ctrl-C (a run interrupted) ends them."""
    from runner.bug_runs import run_once

    scenario, cfg = prepared(doc, out)
    once = run or run_once
    got = Trials()
    for i in range(n):
        ran = once(cfg, scenario)
        if ran.interrupted:
            got.interrupted = True
            break
        got.results.append(ran.results)
        if need is not None:
            hits = got.hits(finding)
            if hits >= need or hits + (n - i - 1) < need:
                break
    return got


def save_replay(doc: dict[str, Any], path: Path) -> Path:
    """Writes a replay document as a scenario file (``kafka-chaos run --scenario-file``)."""
    write_atomic(path, to_toml(doc))
    return path


def read_results(run_dir: Path) -> dict[str, Any]:
    """A run's results.json, read bounded (a regular file of a sane size) and checked for the
    types its findings are read from; RunConfigError (one line) when it was never checked or
    is damaged."""
    from reports.datasets import MAX_JSON_BYTES, load_json

    path = run_dir / RESULTS_FILE
    if not path.exists():
        raise RunConfigError(f"{run_dir} has no {RESULTS_FILE}: check it first "
                             f"(kafka-chaos check {run_dir})")
    doc = load_json(path)
    if doc is None:
        raise RunConfigError(f"{path}: not a JSON object in a regular file of at most "
                             f"{MAX_JSON_BYTES >> 20} MiB")
    if (problem := shape_problem(doc) or reading_problem(doc)) is not None:
        raise RunConfigError(f"{path}: {problem}")
    return doc
