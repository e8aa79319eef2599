"""How check results combine (checkers/combine.py): Jepsen's compose rules, no Spark."""

from __future__ import annotations

from typing import Any

import pytest

from checkers.checks import CHECKS, RowAnomalies
from checkers.combine import UNKNOWN, CheckResult, combine, merge_valid


def _entry(count: int, allowed: bool) -> dict[str, Any]:
    return {"count": count, "allowed": allowed}


@pytest.mark.parametrize(("a", "b", "merged"), [
    (True, True, True), (True, UNKNOWN, UNKNOWN), (UNKNOWN, True, UNKNOWN),
    (UNKNOWN, False, False), (False, UNKNOWN, False), (True, False, False),
    (UNKNOWN, UNKNOWN, UNKNOWN),
])
def test_false_beats_unknown_beats_true(a: bool | str, b: bool | str,
                                        merged: bool | str) -> None:
    assert merge_valid(a, b) == merged


def test_one_result_validity() -> None:
    assert CheckResult().valid is True
    assert CheckResult(unknown=["no drain"]).valid == UNKNOWN
    assert CheckResult(anomalies={"lost": _entry(3, True)}).valid is True
    assert CheckResult(anomalies={"lost": _entry(0, False)}).valid is True
    assert CheckResult(anomalies={"lost": _entry(1, False)}, unknown=["x"]).valid is False


def test_combine_concatenates_reasons_and_unites_entries() -> None:
    c = combine([
        CheckResult(unknown=["first"], stats={"writes": 1}),
        CheckResult(anomalies={"lost": _entry(2, False)}, unknown=["second"],
                    extra={"mechanism": {"observed": False}}),
        CheckResult(anomalies={"duplicate": _entry(1, True)}, stats={"reads": 2}),
    ])
    assert c.valid is False
    assert c.unknown == ["first", "second"]
    assert set(c.anomalies) == {"lost", "duplicate"}
    assert c.stats == {"writes": 1, "reads": 2}
    assert c.extra == {"mechanism": {"observed": False}}


def test_unknown_without_forbidden_anomaly_is_unknown() -> None:
    c = combine([CheckResult(anomalies={"lost": _entry(0, False)}),
                 CheckResult(unknown=["no ack"])])
    assert c.valid == UNKNOWN


def test_two_checks_reporting_one_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="lost"):
        combine([CheckResult(anomalies={"lost": _entry(0, False)}),
                  CheckResult(anomalies={"lost": _entry(1, False)})])


def test_row_checks_come_before_their_collection() -> None:
    names = [c.name for c in CHECKS]
    collect_at = next(i for i, c in enumerate(CHECKS) if isinstance(c, RowAnomalies))
    assert {"identity", "reorder", "positions"} <= set(names[:collect_at])
    assert len(set(names)) == len(names)
