"""The checker on Sail (``--spark-master sail``) gives the answers it gives on Spark.

A process has one engine (PySpark switches its functions to Spark Connect for the whole
process once a Connect session exists), so Sail runs in child processes here: the
checker's answer tests (known answers, agreement with the plain-Python reference) in a
pytest session of their own, and the CLI on a synthetic history whose results are compared
with the shared Spark session's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.bench_data import Spec, generate

ROOT = Path(__file__).resolve().parents[2]

#: The answer tests the Sail session must pass as they are.
ANSWER_TESTS = ["tests/checkers/test_checker_known_answers.py",
                "tests/checkers/test_checker_properties.py",
                "tests/checkers/test_checker_torn.py"]


@pytest.mark.spark
def test_the_checkers_answer_tests_pass_on_sail(tmp_path: Path) -> None:
    env = dict(os.environ, KAFKA_CHAOS_TEST_SPARK_MASTER="sail")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
         f"--basetemp={tmp_path / 'base'}", "--junitxml", str(tmp_path / "junit.xml"),
         *ANSWER_TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    report = (tmp_path / "junit.xml").read_text()
    # the child ran the tests, on Sail: every test passed and none was skipped
    assert 'skipped="0"' in report and 'failures="0"' in report and 'errors="0"' in report
    ran = int(report.split('tests="', 1)[1].split('"', 1)[0])
    assert ran >= 20, report[:400]


def _comparable(results: dict) -> dict:  # type: ignore[type-arg]
    """What must not depend on the engine: the verdict, and per kind its count, excused
    count, known bugs and examples (less the examples' reads, ordered by read time only)."""
    out: dict = {"valid": results["valid"]}  # type: ignore[type-arg]
    for kind, a in results["anomalies"].items():
        out[kind] = {"count": a["count"], "excused": a.get("excused"),
                     "known_bugs": a.get("known_bugs"),
                     "examples": [{k: v for k, v in e.items() if k != "reads"}
                                  for e in a.get("examples", [])]}
    return out


@pytest.mark.spark
def test_sail_judges_a_synthetic_history_as_spark_does(spark,  # type: ignore[no-untyped-def]
                                                       tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    generate(Spec(writes=30_000, part_files=2), str(run))
    scratch_root = tempfile.gettempdir()
    proc = subprocess.Popen([sys.executable, "-m", "checkers", str(run), "--spark-master",
                             "sail"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, (out, err)  # the history holds anomalies: invalid
    assert out.startswith("valid: False (lost="), out
    assert err.strip() == "", err  # Sail's own log lines stay quiet
    sail = json.loads((run / "results.json").read_text())
    assert sail["checker"]["master"] == "sail" and sail["checker"]["sail_version"]
    # nothing of the child's engine is left: its scratch (kept tables) went with it
    left = [p for p in os.listdir(scratch_root)
            if p.startswith(f"kafka-chaos-sail-{proc.pid}-")]
    assert left == []
    from checkers import check_run

    classic = check_run(str(run), write_results=False)
    assert classic["checker"]["master"].startswith("local")
    assert "error" not in classic and "error" not in sail, sail.get("traceback")
    counts = {k: a["count"] for k, a in sail["anomalies"].items() if a["count"]}
    # the generator injects these kinds: the comparison is about real findings
    assert {"lost", "duplicate", "offset-mismatch", "reorder", "reused-offset"} <= set(
        counts), counts
    assert _comparable(sail) == _comparable(classic)
