"""The checker's exit handler (checkers/session.py) with a JVM that still runs a job: the
JVM is killed before its scratch goes, never stopped. Stopping a SparkContext deletes its
block manager's directories under the tasks still running (a warm-up check a short run
outlived), and the JVM printed their stack traces after the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import SparkContext

from checkers import session


class _Jvm:
    """The JVM's side of a context and the JVM process, recording what is done to them."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.calls: list[str] = []
        self.pid = 4242
        self.returncode: int | None = None

    def stop(self) -> None:  # the JavaSparkContext's: Spark's own cleanup runs
        self.calls.append("context stopped")

    def sc(self) -> _Jvm:
        return self

    def cancelAllJobs(self) -> None:  # noqa: N802 - the JVM's name
        self.calls.append("jobs cancelled")

    def poll(self) -> int | None:  # the JVM's process, from here on
        return self.returncode

    def kill(self) -> None:
        self.calls.append(f"killed, scratch there: {self.scratch.is_dir()}")
        self.returncode = -9

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode


def test_the_jvm_is_killed_before_its_scratch_goes_and_never_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "kafka-chaos-spark-1-x"
    (scratch / "blockmgr-1" / "0c").mkdir(parents=True)  # a running task's shuffle files
    jvm = _Jvm(scratch)
    sc = SparkContext.__new__(SparkContext)  # its Python side, without a JVM behind it
    sc._jsc = jvm
    sc._accumulatorServer = None  # type: ignore[assignment]
    monkeypatch.setattr(SparkContext, "_active_spark_context", sc)
    monkeypatch.setattr(SparkContext, "_gateway", type("Gateway", (), {"proc": jvm})())
    session._remove_scratch_at_exit(scratch)
    assert jvm.calls == ["killed, scratch there: True"]
    assert not scratch.exists()
    assert SparkContext._active_spark_context is None  # its Python side stopped
