"""The checker's JVM: the throughput collector and two malloc arenas (what keeps a 10M-write
check's process tree under 4 GB, checkers/README.md), set for the JVM only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from checkers import session


@pytest.mark.spark
def test_the_driver_jvm_runs_parallel_gc_with_two_malloc_arenas(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    collectors = {b.getName() for b in jvm.java.lang.management.ManagementFactory
                  .getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, collectors
    pid = jvm.java.lang.ProcessHandle.current().pid()
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    assert env.get("MALLOC_ARENA_MAX") == os.environ.get("MALLOC_ARENA_MAX", "2")


def test_the_jvm_environment_is_set_only_while_the_jvm_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    with session._jvm_environment():
        assert os.environ["MALLOC_ARENA_MAX"] == "2"
    assert "MALLOC_ARENA_MAX" not in os.environ
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")  # the caller's own value wins and stays
    with session._jvm_environment():
        assert os.environ["MALLOC_ARENA_MAX"] == "8"
    assert os.environ["MALLOC_ARENA_MAX"] == "8"


@pytest.mark.parametrize(("opts", "added"), [
    ("", "-XX:+UseParallelGC "),
    ("-Xss4m", "-XX:+UseParallelGC "),
    ("-XX:+UseGCOverheadLimit", "-XX:+UseParallelGC "),
    ("-XX:+UseG1GC", ""),
    ("-Xss4m -XX:+UseZGC", ""),
])
def test_a_collector_the_user_chose_is_not_doubled(opts: str, added: str) -> None:
    assert session._collector(opts) == added
