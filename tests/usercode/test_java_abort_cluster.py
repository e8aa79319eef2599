"""KAFKA-17582 on a real cluster (issue 48): the Java client's consume-transform-produce
loop (KcDriver given an input topic) aborts every fourth transaction. Polling on after the
abort, the consumer's position stays past the aborted batch and the pipeline check counts
exactly that batch's inputs as missing; seeking back to the committed offsets first (the
control) makes the pipeline exactly-once and the run valid. The script the finding's tallies
come from (docs/findings/java_abort_no_rewind.py) does the runs; this test runs each side
once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chaos.user_api import ChaosSession
from compose.cluster import KafkaCluster
from runner.java_client import ensure_java
from tests.support.clients import JAVA, version

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"inputs": 120, "partitions": 2, "batch": 10, "abort_every": 4, "bound_s": 60.0}


def _finding() -> ModuleType:
    """docs/findings/java_abort_no_rewind.py as a module (docs/ is not a package),
    registered by its name (its dataclasses look it up)."""
    name = "java_abort_no_rewind"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "docs" / "findings" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def java_command() -> list[str]:
    """The Java driver's command, built from Maven Central on first use (cached)."""
    return ensure_java(version(JAVA), say=print).command()


# The affected side's pipeline has missing inputs by design: the test says it expects
# INVALID (a chaos test that states no verdict is judged valid).
@pytest.mark.chaos(expect_valid=False)
def test_abort_without_rewind_skips_the_aborted_inputs(
        chaos: ChaosSession, kafka_cluster: KafkaCluster, java_command: list[str]) -> None:
    f = _finding()
    o = f.pipeline_run(chaos, kafka_cluster, java_command, "affected",
                       settings=f.Settings(**SETTINGS))
    assert o.driver_exitcode == 0 and o.rebalances == 1, o
    assert o.txns["aborted"] >= 2 and o.txns["unknown"] == 0, o.txns
    # every aborted batch's inputs, and nothing else, without an output
    assert o.counts["missing"] == len(o.aborted_inputs) > 0, o
    assert set(o.missing_examples) <= o.aborted_inputs
    assert o.counts["duplicated"] == o.counts["orphaned"] == 0, o.counts
    assert o.verdict == "skipped"
    # the position after each abort is past the group's committed offset somewhere
    assert all(a.position != a.committed for a in o.aborts), o.aborts
    assert o.valid is False and o.pipeline_valid is False


def test_abort_with_rewind_is_exactly_once(
        chaos: ChaosSession, kafka_cluster: KafkaCluster, java_command: list[str]) -> None:
    f = _finding()
    o = f.pipeline_run(chaos, kafka_cluster, java_command, "control",
                       settings=f.Settings(**SETTINGS))
    assert o.driver_exitcode == 0 and o.rebalances == 1, o
    assert o.txns["aborted"] >= 2 and o.txns["unknown"] == 0, o.txns
    assert o.counts == {"inputs": SETTINGS["inputs"], "outputs": SETTINGS["inputs"],
                        "missing": 0, "duplicated": 0, "orphaned": 0, "unsourced": 0}, o
    assert o.verdict == "exactly-once" and o.valid is True
