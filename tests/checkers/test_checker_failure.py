"""A check that Spark fails is told in one line, and what the JVM logged goes to the run's
logs, not the terminal (issue 47 point 10): a history part that is no Parquet file makes a
Spark task fail, the job abort and the check end ``unknown``."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers.check import check_run, one_line
from tests.support.literal import History

pytestmark = pytest.mark.spark


def test_a_py4j_error_is_told_by_its_java_exception_line() -> None:
    exc = RuntimeError("An error occurred while calling o62.collectToPython.\n"
                       ": org.apache.spark.SparkException: Job aborted due to stage failure: "
                       "Task 0 in stage 53.0 failed 1 times\n"
                       "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages"
                       "(DAGScheduler.scala:2856)\n")
    assert one_line(exc) == ("RuntimeError: org.apache.spark.SparkException: Job aborted due "
                             "to stage failure: Task 0 in stage 53.0 failed 1 times")
    assert one_line(ValueError("plain")) == "ValueError: plain"


def test_a_check_spark_fails_is_unknown_in_one_line_with_the_jvm_log_kept(
        spark: object, tmp_path: Path) -> None:
    h = History()
    for s in range(40):
        h.write(1, s, offset=s, at_ms=1000 + s).drain(0, s, 1, s, at_ms=60_000 + s)
    run = Path(h.save(tmp_path / "run", parts=4))
    part = sorted((run / "history" / "writes.parquet").glob("*.parquet"))[1]
    part.write_bytes(b"this is no parquet file, though its name says so" * 4)
    results = check_run(run)
    assert results["valid"] == "unknown"
    error = results["error"]
    assert "\n" not in error and len(error) < 600, error
    assert results["unknown_reasons"] == [f"the checker failed: {error}"]
    logged = results["checker"]["spark_log"]
    assert logged["errors"] >= 1, logged
    text = (run / logged["file"]).read_text()
    assert " ERROR " in text and "parquet" in text.lower(), text[:2000]
