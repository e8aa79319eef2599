"""Bad input to explore, replay and shrink: one line and exit 2, before any run starts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.run.cli import CLI


def fake_run(path: Path, results: dict[str, Any] | None) -> Path:
    """A run directory as far as these commands read one first (run.json, events)."""
    (path / "history").mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"scenario": "x", "options": {"brokers": 3}}))
    (path / "history" / "events.jsonl").write_text("")
    if results is not None:
        (path / "results.json").write_text(json.dumps(results))
    return path


@pytest.mark.parametrize("args,line", [
    (["explore", "--budget", "0"], "--budget must be more than 0, got '0'"),
    (["explore", "--budget", "soon"], "--budget must be a time such as 90s, 30m or 2h"),
    (["explore", "--budget", "1h", "--runs", "0"], "--runs must be >= 1, got 0"),
    (["explore", "--budget", "1h", "--fix", "scenario=x"], "'scenario' is not a run option"),
    (["explore", "--budget", "1h", "--fix", "brokers"], "--fix expects KEY=VALUE"),
    (["explore", "--budget", "1h", "--clients", "kafka-python"], "--clients:"),
    (["explore", "--budget", "1h", "--kafka-versions", "2.8.0"],
     "no run of the space can run with the fixed options: --kafka-version must be 3.9.x"),
    # the last of the draws' refusals (which depends on the Kafka versions drawn from)
    (["explore", "--budget", "1h", "--fix", "brokers=1"],
     "no run of the space can run with the fixed options: --replication-factor must be 1..1"),
    (["replay", "/nonexistent"], "/nonexistent is not a run directory"),
    (["replay", "RUN", "--repeat", "0"], "--repeat must be >= 1, got 0"),
    (["replay", "UNCHECKED"], "has no results.json: check it first"),
    (["shrink", "VALID"], "is VALID: there is no finding to shrink"),
    (["shrink", "RUN", "--runs", "2", "--needed", "3"], "--needed must be 1..--runs (2), got 3"),
    (["shrink", "RUN", "--budget", "0s"], "--budget must be more than 0"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], line: str, tmp_path: Path) -> None:
    dirs = {"RUN": fake_run(tmp_path / "run", {"valid": False, "anomalies": {
                "lost": {"count": 1, "allowed": False, "examples": []}}}),
            "UNCHECKED": fake_run(tmp_path / "unchecked", None),
            "VALID": fake_run(tmp_path / "valid", {"valid": True, "anomalies": {}})}
    refused([str(dirs.get(a, a)) for a in args], line, tmp_path)


def refused(argv: list[str], line: str, tmp_path: Path) -> None:
    """The command exits 2 with ``line`` as its one line on stderr, and nothing ran."""
    done = subprocess.run([*CLI, *argv, "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and line in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


FINDING = {"valid": False, "anomalies": {"lost": {"count": 1, "allowed": False}}}
DEEP = "[" * 100_000 + "]" * 100_000  # nested past the JSON parser's recursion limit


def _results_text(text: str) -> Callable[[Path], object]:
    return lambda run: (run / "results.json").write_text(text)


def _results_fifo(run: Path) -> None:
    (run / "results.json").unlink()
    os.mkfifo(run / "results.json")  # a reader that opens it waits for a writer forever


def _results_dev_zero(run: Path) -> None:
    (run / "results.json").unlink()
    (run / "results.json").symlink_to("/dev/zero")  # a reader that reads it never ends


def _run_json(doc: dict[str, Any] | str) -> Callable[[Path], object]:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return lambda run: (run / "run.json").write_text(text)


@pytest.mark.parametrize("command,damage,line", [
    ("replay", _results_text(json.dumps({"valid": False, "anomalies": {
        "lost": {"count": "many", "allowed": False}}})), "anomalies.lost.count is 'many'"),
    ("shrink", _results_text(json.dumps({"valid": False, "anomalies": ["lost"]})),
     "anomalies is not an object"),
    ("replay", _results_text(json.dumps({"valid": False, "anomalies": {
        "lost": {"count": 3, "excused": "two", "allowed": False}}})),
     "anomalies.lost.excused is 'two'"),
    ("shrink", _results_fifo, "results.json: not a JSON object in a regular file"),
    ("replay", _results_dev_zero, "results.json: not a JSON object in a regular file"),
    ("shrink", _results_text(DEEP), "results.json: not a JSON object in a regular file"),
    ("replay", _run_json(DEEP), "run.json: not a JSON object in a regular file"),
    ("shrink", _run_json({"scenario": "x", "options": {"brokers": 3}, "cluster": "4.3.1"}),
     "run.json: cluster is not an object"),
], ids=["count-not-a-number", "anomalies-a-list", "excused-not-a-number", "results-fifo",
        "results-dev-zero", "results-nested-too-deep", "run-json-nested-too-deep",
        "run-json-cluster-not-an-object"])
def test_a_damaged_run_directory_is_one_line_and_exit_2(
        command: str, damage: Callable[[Path], object], line: str, tmp_path: Path) -> None:
    run = fake_run(tmp_path / "run", FINDING)
    damage(run)
    refused([command, str(run)], line, tmp_path)
