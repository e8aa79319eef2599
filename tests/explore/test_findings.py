"""Violations, reproduction and the tally line, on literal results."""

from __future__ import annotations

from typing import Any

from contract.exit_codes import missed_expectations
from runner.explore.findings import label, reading_problem, reproduces, tally, violations


def results(valid: object = True, **anomalies: dict[str, Any]) -> dict[str, Any]:
    return {"valid": valid, "anomalies": anomalies}


def test_violations_are_forbidden_kinds_with_unexplained_records() -> None:
    r = results(False,
                lost={"count": 5, "allowed": False},
                duplicate={"count": 9, "allowed": False, "excused": 2, "accepted": 3},
                reorder={"count": 4, "allowed": True},  # allowed: not a violation
                poll_skip={"count": 0, "allowed": False})
    assert violations(r) == {"lost": 5, "duplicate": 4}
    assert violations(results()) == {}
    assert violations(None) == {"unknown": 1}  # never checked: it could not tell
    assert violations(results("unknown")) == {"unknown": 1}


def test_a_missed_expectation_is_a_violation() -> None:
    r: dict[str, Any] = {"valid": True, "anomalies": {"lost": {"count": 901, "allowed": True}},
         "expectations": {"met": False, "details": [
             {"what": "lost ==0", "actual": 901, "met": False},
             {"what": "divergence ==0", "actual": 0, "met": True}]}}
    assert violations(r) == {"expectation: lost ==0": 901}
    r["expectations"]["details"][0].update(what="valid is True", actual="unknown")
    assert violations(r) == {"expectation: valid is True": 1}
    r["expectations"]["details"] = []  # missed, and no detail says which
    assert violations(r) == {"expectation: the expectations (not met)": 1}


def test_a_missed_expectation_is_read_from_its_details_not_from_its_line() -> None:
    # an expectation whose own words hold " (got ": the line cannot be split back apart
    r = {"valid": True, "anomalies": {}, "expectations": {"met": False, "details": [
        {"what": "lost ==0 (got nothing)", "actual": 901, "met": False},
        {"what": "duplicate ==0", "actual": "12", "met": False}]}}
    assert missed_expectations(r) == ["lost ==0 (got nothing) (got 901)",
                                      "duplicate ==0 (got 12)"]
    # the details win: the whole name with its count; a text "12" is no count
    assert violations(r) == {"expectation: lost ==0 (got nothing)": 901,
                             "expectation: duplicate ==0": 1}


def test_what_violations_could_not_read_is_a_reading_problem() -> None:
    assert reading_problem(results(False, lost={"count": 3, "excused": 1, "accepted": 2,
                                                "allowed": False})) is None
    assert reading_problem(results(False, lost={"count": 3, "excused": "1"})) == (
        "anomalies.lost.excused is '1'")
    assert reading_problem(results(False, lost={"count": 3, "accepted": True})) == (
        "anomalies.lost.accepted is True")
    assert reading_problem({"expectations": {"met": False, "details": "lost"}}) == (
        "expectations.details is not a list of objects")
    assert reading_problem({"expectations": {"met": False, "details": [1]}}) == (
        "expectations.details is not a list of objects")


def test_a_run_reproduces_when_it_shows_one_of_the_violations_again() -> None:
    finding = ["duplicate", "lost"]
    assert reproduces(finding, results(False, lost={"count": 1, "allowed": False}))
    assert not reproduces(finding, results(False, reorder={"count": 1, "allowed": False}))
    assert not reproduces(finding, results())
    # an empty finding (a VALID run replayed) is reproduced by VALID runs only
    assert reproduces([], results())
    assert not reproduces([], results("unknown"))


def test_the_tally_counts_each_violation_per_run() -> None:
    runs = [results(False, duplicate={"count": 12, "allowed": False}), results(),
            results(False, duplicate={"count": 7, "allowed": False})]
    assert tally(["duplicate"], runs) == "reproduced 2/3: duplicate 12, 0, 7"
    assert tally(["lost"], runs) == "not reproduced (0/3): lost 0, 0, 0"
    assert tally([], [results(), results()]) == "reproduced 2/2: valid"
    assert label([]) == "valid" and label(["lost", "unknown"]) == "lost, unknown"
