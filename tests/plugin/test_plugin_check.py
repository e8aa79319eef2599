"""``chaos_check`` on run directories written by hand, and a scenario's own expectations."""

from __future__ import annotations

import re

import pytest

from tests.plugin.fakes import write_run

pytest_plugins = ["pytester"]


def _failed(res: pytest.RunResult) -> set[str]:
    """The names of the tests a pytester run failed."""
    return set(re.findall(r"^FAILED \S+::(\w+)", res.stdout.str(), re.M))


def _suite(pytester: pytest.Pytester, body: str) -> pytest.Pytester:
    write_run(pytester.path / "runs" / "acks1" / "r1", counts={"lost": 7}, allowed={"lost"})
    write_run(pytester.path / "runs" / "bad" / "r1", counts={"duplicate": 3})
    write_run(pytester.path / "runs" / "unknown" / "r1", valid="unknown",
              counts={"unseen": 4}, allowed={"unseen"})
    write_run(pytester.path / "runs" / "scenario" / "r1", counts={"lost": 2},
              allowed={"lost"}, expectations={"met": False, "details": [
                  {"what": "lost >5", "actual": 2, "met": False}]})
    pytester.makepyfile("import pytest\nfrom pathlib import Path\n"
                        "RUNS = Path(__file__).parent / 'runs'\n" + body)
    return pytester


def test_check_reads_results_and_judges_the_marker(pytester: pytest.Pytester) -> None:
    res = _suite(pytester, """
@pytest.mark.chaos(expect={"lost": 7}, expect_valid=True)
def test_acks1(chaos_check):
    r = chaos_check(RUNS / "acks1" / "r1")
    assert r.counts["lost"] == 7 and r.acked == 1000 and r.nonzero == {"lost": 7}

@pytest.mark.chaos(expect_valid=True)
def test_bad(chaos_check):
    chaos_check(RUNS / "bad" / "r1")

def test_unknown(chaos_check):
    r = chaos_check(RUNS / "unknown" / "r1", expect_valid="unknown", expect={"unseen": ">0"})
    assert r.verdict == "unknown"

def test_not_a_run_dir(chaos_check, tmp_path):
    chaos_check(tmp_path)
""").runpytest()
    res.assert_outcomes(passed=2, failed=2)
    out = res.stdout.str()
    assert "expected verdict valid, got INVALID" in out
    assert "forbidden here: duplicate=3" in out
    assert "is not a run directory" in out


def test_scenario_expectations_apply_beside_the_markers(
        pytester: pytest.Pytester) -> None:
    res = _suite(pytester, """
def test_scenario(chaos_check):
    chaos_check(RUNS / "scenario" / "r1")

@pytest.mark.chaos(scenario_expectations=False)
def test_ignored(chaos_check):
    chaos_check(RUNS / "scenario" / "r1")

@pytest.mark.chaos(expect={"lost": 2})
def test_marker_adds(chaos_check):
    chaos_check(RUNS / "scenario" / "r1")
""").runpytest()
    # ``expect`` adds to the scenario's expectations (it replaced them before issue 44)
    res.assert_outcomes(passed=1, failed=2)
    assert _failed(res) == {"test_scenario", "test_marker_adds"}
    assert "expected lost >5, got 2" in res.stdout.str()


def test_a_test_that_states_no_verdict_is_judged_valid(pytester: pytest.Pytester) -> None:
    """Issue 44: an INVALID run passed a chaos test with no expectation, and one with
    ``expect`` but no ``expect_valid`` (both passed on the old plugin)."""
    res = _suite(pytester, """
def test_silent(chaos_check):
    chaos_check(RUNS / "bad" / "r1")

@pytest.mark.chaos(expect={"duplicate": 3})
def test_counts_only(chaos_check):
    chaos_check(RUNS / "bad" / "r1")

@pytest.mark.chaos(expect={"duplicate": 3}, expect_valid=False)
def test_says_invalid(chaos_check):
    chaos_check(RUNS / "bad" / "r1")

def test_valid_run(chaos_check):
    chaos_check(RUNS / "acks1" / "r1")
""").runpytest()
    res.assert_outcomes(passed=2, failed=2)
    assert _failed(res) == {"test_silent", "test_counts_only"}
    assert ("expected verdict valid (the test and its scenario state no verdict, so the run "
            "must be valid), got INVALID") in res.stdout.str()


def test_counting_on_an_unknown_result_fails(pytester: pytest.Pytester) -> None:
    """``count("unseen") == 4`` passed on an unknown run before issue 44; now it raises,
    unless the test asks for the number as it stands."""
    res = _suite(pytester, """
from chaos.plugin_result import CountNotEstablished

def test_counts(chaos_check):
    r = chaos_check(RUNS / "unknown" / "r1", expect_valid="unknown")
    assert r.count("unseen") == 4

def test_raw(chaos_check):
    r = chaos_check(RUNS / "unknown" / "r1", expect_valid="unknown")
    assert r.count("unseen", allow_unknown=True) == 4
    with pytest.raises(CountNotEstablished):
        r.count("lost")
""").runpytest()
    res.assert_outcomes(passed=1, failed=1)
    assert _failed(res) == {"test_counts"}
    assert "CountNotEstablished: unseen: the verdict is unknown" in res.stdout.str()


def test_unknown_anomaly_kind_is_a_miss(pytester: pytest.Pytester) -> None:
    res = _suite(pytester, """
@pytest.mark.chaos(expect={"lossage": 0})
def test_typo(chaos_check):
    chaos_check(RUNS / "acks1" / "r1")
""").runpytest()
    res.assert_outcomes(failed=1)
    assert "unknown anomaly kind 'lossage'" in res.stdout.str()


def test_check_resolves_callable_expectations_from_run_json(pytester: pytest.Pytester) -> None:
    write_run(pytester.path / "r", counts={"lost": 4}, allowed={"lost"},
              run={"scenario": "x", "options": {"acks": "1"}})
    pytester.makepyfile("""
import pytest
from pathlib import Path

@pytest.mark.chaos(expect=lambda cfg: {"lost": ">0"} if cfg.acks == "1" else {"lost": 0})
def test_callable(chaos_check):
    chaos_check(Path(__file__).parent / "r")
""")
    pytester.runpytest().assert_outcomes(passed=1)
