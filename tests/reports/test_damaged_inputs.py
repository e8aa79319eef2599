"""A damaged or hostile run directory is named in one line, never a traceback, a hang or a
memory blow-up (issue 47). Before: results.json with a wrong type was a traceback (exit 1),
one such run aborted the whole matrix page, a FIFO as events.jsonl blocked the report and
the check, and deeply nested JSON raised RecursionError."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkers.runfiles import RunDir
from contract.results import shape_problem
from reports.datasets import load_events, load_json
from tests.run.cli import CLI


def _run(path: Path, results: object, scenario: str) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"scenario": scenario, "run_id": path.name}))
    (path / "results.json").write_text(json.dumps(results))
    return path


def test_a_damaged_results_json_is_one_line_and_the_matrix_names_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = _run(tmp_path / "runs" / "bad" / "r1", {"valid": True, "anomalies": 5}, "bad")
    _run(tmp_path / "runs" / "good" / "r2", {"valid": True, "anomalies": {}}, "good")
    proc = subprocess.run([*CLI, "report", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"kafka-chaos: error: {bad / 'results.json'} is damaged: anomalies is not an object"]
    proc = subprocess.run([*CLI, "report", str(tmp_path / "runs")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (tmp_path / "runs" / "index.html").read_text()
    assert "Skipped, damaged: <code>bad/r1</code>" in page and ">good<" in page


def test_shapes_a_reader_indexes_into_are_checked() -> None:
    assert shape_problem({"valid": True, "anomalies": {}, "stats": {"writes": {"ok": 3}}}) is None
    assert shape_problem([]) == "not a JSON object"
    assert shape_problem({"valid": "yes"}) == "valid is 'yes'"
    assert shape_problem({"anomalies": {"lost": {"count": "3"}}}) == "anomalies.lost.count is '3'"
    assert shape_problem({"anomalies": {"lost": {"count": 1, "examples": [1]}}}) == (
        "anomalies.lost.examples is not a list of objects")
    assert shape_problem({"stats": {"writes": {"ok": True}}}) == (
        "stats.writes is not an object of counts")


def _returns_within(fn: Callable[[], Any], seconds: float = 10.0) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    return out[0]


def test_a_fifo_or_a_device_is_not_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    assert _returns_within(lambda: load_events(fifo)) == []
    assert _returns_within(lambda: RunDir(str(tmp_path)).read_text("events.jsonl")) is None
    assert _returns_within(lambda: load_json(Path("/dev/zero"))) is None
    assert _returns_within(lambda: RunDir("/dev").read_text("zero")) is None


def test_deeply_nested_json_is_no_document(tmp_path) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path / "results.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert load_json(deep) is None
    (tmp_path / "events.jsonl").write_text('{"ts_ns": 1}\n' + "[" * 200_000 + "\n")
    assert load_events(tmp_path / "events.jsonl") == [{"ts_ns": 1}]
