"""The plugin never passes a run whose counts are not established facts (issue 11): an
``unknown`` run fails every expectation unless ``expect_valid="unknown"`` is given, and an
unchecked kind is only a lower bound. Literal results.json, no cluster, no Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaos.plugin_result import ChaosResult, Expectation, scenario_misses
from tests.plugin.fakes import write_run

DRAIN_REASON = "the history has no drain end event: the final read did not finish"


def _run(tmp_path: Path, name: str = "r", **kw: Any) -> ChaosResult:
    return ChaosResult.from_run_dir(write_run(tmp_path / name, **kw))


def _edit(result: ChaosResult, change: Any) -> ChaosResult:
    """Changes results.json of the run as a checker would have written it, and re-reads it."""
    path = result.run_dir / "results.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return ChaosResult.from_run_dir(result.run_dir)


def _incomplete_drain(doc: dict[str, Any]) -> None:
    doc["valid"] = "unknown"
    doc["unknown_reasons"] = [DRAIN_REASON]
    doc["stats"]["drain_complete"] = False


def test_lost_zero_on_an_incomplete_drain_fails_with_the_reason(tmp_path: Path) -> None:
    r = _edit(_run(tmp_path), _incomplete_drain)
    assert r.counts["lost"] == 0 and r.valid == "unknown"
    misses = [str(m) for m in Expectation.of({"lost": 0}).misses(r)]
    assert len(misses) == 1, misses
    assert "a verdict the counts can stand on" in misses[0] and DRAIN_REASON in misses[0]
    assert "unknown because: " + DRAIN_REASON in r.describe()


def test_expect_valid_unknown_lets_an_unknown_run_pass(tmp_path: Path) -> None:
    r = _edit(_run(tmp_path), _incomplete_drain)
    assert Expectation.of({"lost": 0}, "unknown").misses(r) == []
    # and asking for valid names the reason instead of a bare "unknown"
    (miss,) = Expectation.of({"lost": 0}, True).misses(r)
    assert str(miss) == f"expected verdict valid, got unknown ({DRAIN_REASON})"


def test_a_run_with_a_verdict_still_passes(tmp_path: Path) -> None:
    r = _run(tmp_path, counts={"lost": 3}, allowed={"lost"})
    assert Expectation.of({"lost": ">0"}).misses(r) == []


@pytest.mark.parametrize(("cond", "missed"), [(0, True), ("<=1", True), (">0", False),
                                              (">=2", False), ("==2", True)])
def test_an_unchecked_count_is_a_lower_bound(tmp_path: Path, cond: Any, missed: bool) -> None:
    def unchecked(doc: dict[str, Any]) -> None:
        doc["anomalies"]["divergence"].update(count=0 if cond in (0, "<=1") else 2,
                                              checked=False, reason="not checked")
    r = _edit(_run(tmp_path), unchecked)
    misses = [str(m) for m in Expectation.of({"divergence": cond}).misses(r)]
    assert bool(misses) is missed, misses
    if missed and cond != "==2":
        assert "divergence was not checked (not checked)" in misses[0]


def test_a_checked_divergence_meets_zero(tmp_path: Path) -> None:
    r = _edit(_run(tmp_path), lambda d: d["anomalies"]["divergence"].update(checked=True))
    assert Expectation.of({"divergence": 0}, True).misses(r) == []


def test_scenario_expectations_never_pass_an_unknown_run(tmp_path: Path) -> None:
    block = {"met": True, "details": [{"what": "divergence ==0", "actual": 0, "met": True}]}
    r = _edit(_run(tmp_path, expectations=block), _incomplete_drain)
    (miss,) = scenario_misses(r)
    assert DRAIN_REASON in str(miss)
    asked = {"met": True, "details": [{"what": "valid == 'unknown'", "actual": "unknown",
                                       "met": True}]}
    r2 = _edit(_run(tmp_path, "r2", expectations=asked), _incomplete_drain)
    assert scenario_misses(r2) == []
