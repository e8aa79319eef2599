"""Nothing passes without proof (issue 11): a check that was asked for and could not run,
a fault schedule that never hit, a transactional run that learned no outcome — each makes the
verdict ``unknown`` with its reason, never a silent 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checker_histories import History
from checker_segments import batch, write_log

from checkers import check_run
from checkers.verdict import expectations

pytestmark = pytest.mark.spark


def _clean(h: History) -> History:
    """Four acknowledged writes, all drained: nothing wrong in the records themselves."""
    for s in range(4):
        h.write(0, s, offset=s)
        h.drain(0, s, 0, s)
    return h.drain_end()


def _check(h: History, path: Path, logs: bool = False) -> dict[str, Any]:
    root = h.save(path)
    if logs:
        for rep in ("broker-1", "broker-2"):
            write_log(root, rep, h.topic, 0, [batch(0, [b"a", b"b", b"c", b"d"])])
    results = check_run(root)
    assert "error" not in results, results.get("traceback")
    return results


# ---------------------------------------------------------------------- divergence
def test_divergence_asked_for_and_absent_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.run["options"] = {"collect_data": True}  # the run asked for the replicas' data
    r = _check(h, tmp_path / "run")
    div = r["anomalies"]["divergence"]
    assert div["checked"] is False and div["count"] == 0
    assert "logs/data is absent" in div["reason"]
    assert r["valid"] == "unknown"
    assert any(x.startswith("divergence not checked") for x in r["unknown_reasons"])
    assert r["stats"]["divergence"]["checked"] is False


def test_failed_copy_of_the_data_is_unknown_with_the_error(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.run["options"] = {"collect_data": True}
    h.event("collect-error", "instant", 200_000, targets=[2], node=2, what="data",
            error="APIError: 404 no such container")
    # the other replicas were copied: what was compared is still compared
    r = _check(h, tmp_path / "run", logs=True)
    div = r["anomalies"]["divergence"]
    assert div["checked"] is False and "2: APIError: 404 no such container" in div["reason"]
    assert r["valid"] == "unknown"
    assert r["stats"]["divergence"]["offsets_compared"] == 4


def test_failed_copy_of_a_node_log_alone_does_not_touch_divergence(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.event("collect-error", "instant", 200_000, node=3, what="log", error="APIError: gone")
    r = _check(h, tmp_path / "run", logs=True)
    assert r["anomalies"]["divergence"]["checked"] is True and r["valid"] is True


def test_not_asked_says_not_checked_and_stays_valid(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.run["expect"] = {"valid": True, "anomalies": {"divergence": "==0", "lost": "==0"}}
    r = _check(h, tmp_path / "run")
    div = r["anomalies"]["divergence"]
    assert div["checked"] is False and div["reason"].startswith("not checked")
    assert r["valid"] is True
    # but an expectation of divergence == 0 is not met by a count nobody established
    exp = {d["what"]: d for d in r["expectations"]["details"]}
    assert exp["divergence ==0"]["met"] is False and "not checked" in exp["divergence ==0"]["error"]
    assert exp["lost ==0"]["met"] is True and r["expectations"]["met"] is False


def test_checked_divergence_meets_the_expectation(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.run["options"] = {"collect_data": True}
    h.run["expect"] = {"valid": True, "anomalies": {"divergence": "==0"}}
    r = _check(h, tmp_path / "run", logs=True)
    assert r["anomalies"]["divergence"]["checked"] is True
    assert "reason" not in r["anomalies"]["divergence"]
    assert r["valid"] is True and r["expectations"]["met"] is True


def test_unchecked_count_is_a_lower_bound() -> None:
    anomalies = {"divergence": {"count": 2, "checked": False, "reason": "copy failed"}}
    met = {c: expectations({"anomalies": {"divergence": c}}, "unknown",
                           anomalies)["details"][0]["met"]
           for c in (">0", ">=2", "!=1", "==2", "<=5", "<3", ">=3")}
    assert met == {">0": True, ">=2": True, "!=1": True, "==2": False, "<=5": False,
                   "<3": False, ">=3": False}
