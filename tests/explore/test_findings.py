"""Violations, reproduction and the tally line, on literal results."""

from __future__ import annotations

from runner.explore.findings import label, reproduces, tally, violations


def results(valid: object = True, **anomalies: dict) -> dict:
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
    r = {"valid": True, "anomalies": {"lost": {"count": 901, "allowed": True}},
         "expectations": {"met": False, "details": [
             {"what": "lost ==0", "actual": 901, "met": False},
             {"what": "divergence ==0", "actual": 0, "met": True}]}}
    assert violations(r) == {"expectation: lost ==0": 901}
    r["expectations"]["details"][0].update(what="valid is True", actual="unknown")
    assert violations(r) == {"expectation: valid is True": 1}


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
