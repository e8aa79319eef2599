"""Bad input to explore, replay and shrink: one line and exit 2, before any run starts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.run.cli import CLI


def fake_run(path: Path, results: dict | None) -> Path:
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
    argv = [str(dirs.get(a, a)) for a in args]
    done = subprocess.run([*CLI, *argv, "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and line in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()  # nothing ran
