"""Nothing passes without proof (issue 11): a check that was asked for and could not run,
a fault schedule that never hit, a transactional run that learned no outcome — each makes the
verdict ``unknown`` with its reason, never a silent 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checker_segments import batch, write_log

from checkers import check_run
from checkers.verdict import expectations
from tests.support.literal import History

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
        for rep in ("broker-1", "broker-2", "broker-3"):  # every copy of replication.factor 3
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


# ---------------------------------------------------------------------- faults
def _random_faults(h: History) -> History:
    h.run["faults"] = {"kinds": ["kill", "pause"], "interval_s": 5, "schedule": "random"}
    return h


def test_a_schedule_no_fault_of_which_took_effect_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _random_faults(_clean(History()))
    h.event("fault-error", "instant", 10, targets=[2], fault="pause",
            error="APIError: 500 unable to freeze")
    h.event("fault-error", "instant", 20, fault="kill", error="FaultError: t-0 has no leader")
    h.event("start", "instant", 30, targets=[1])  # a restart is not a new fault
    r = _check(h, tmp_path / "run")
    assert r["stats"]["faults"]["applied"] == 0 and r["stats"]["faults"]["errors"] == 2
    assert r["stats"]["faults"]["error_examples"][0]["error"] == "APIError: 500 unable to freeze"
    assert r["valid"] == "unknown"
    assert any(x.startswith("no fault took effect") and "2 fault starts failed" in x
               for x in r["unknown_reasons"])


def test_one_fault_that_hit_is_enough_and_counted(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _random_faults(_clean(History()))
    h.event("fault-error", "instant", 10, fault="pause", error="boom")
    h.event("kill", "start", 20, targets=[2]).event("kill", "end", 40, targets=[2])
    h.event("pause", "start", 50, targets=[3]).event("pause", "end", 60, targets=[3])
    r = _check(h, tmp_path / "run")
    f = r["stats"]["faults"]
    assert (f["applied"], f["errors"], f["by_kind"]) == (2, 1, {"kill": 1, "pause": 1})
    assert r["valid"] is True


def test_a_scripted_schedule_without_any_fault_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _clean(History())
    h.run["faults"] = {"kinds": [], "schedule": "scripted"}
    r = _check(h, tmp_path / "run")
    assert r["valid"] == "unknown" and r["stats"]["faults"]["applied"] == 0
    # a run that asked for no faults is not held to any
    h2 = _clean(History())
    h2.run["faults"] = {"kinds": [], "schedule": "random"}
    assert _check(h2, tmp_path / "run2")["valid"] is True


# ---------------------------------------------------------------------- transactions
def _txn_run(outcomes: list[str]) -> History:
    h = History()
    h.run["producer_config"] = {"acks": "all", "transactional.id": "tx"}
    h.run["expect"] = {"stats": {"transactions.committed": ">0",
                                 "transactions.aborted": ">0",
                                 "transactions.unknown_percent": "<=20"}}
    seq = 0
    for i, outcome in enumerate(outcomes):
        for _ in range(2):
            h.write(0, seq, offset=seq, txn=f"tx-{i}", txn_outcome=outcome)
            if outcome == "committed":
                h.drain(0, seq, 0, seq)
            seq += 1
    return h.drain_end()


def test_every_transaction_unknown_is_unknown_not_valid(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = _check(_txn_run(["unknown", "unknown", "unknown"]), tmp_path / "run")
    assert r["stats"]["transactions"] == {"committed": 0, "aborted": 0, "unknown": 3,
                                          "unknown_percent": 100}
    assert r["valid"] == "unknown"
    assert any("every transaction is unknown (3)" in x for x in r["unknown_reasons"])
    assert r["expectations"]["met"] is False


def test_transactions_with_outcomes_meet_the_stated_shares(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = _check(_txn_run(["committed"] * 8 + ["aborted", "unknown"]), tmp_path / "run")
    assert r["stats"]["transactions"]["unknown_percent"] == 10
    assert r["valid"] is True
    assert r["expectations"]["met"] is True, r["expectations"]
    # more than a fifth unknown misses the stated share
    r2 = _check(_txn_run(["committed"] * 3 + ["aborted", "unknown", "unknown"]),
                tmp_path / "run2")
    missed = [d for d in r2["expectations"]["details"] if not d["met"]]
    assert [d["what"] for d in missed] == ["stats.transactions.unknown_percent <=20"]


# ---------------------------------------------------------------------- producer processes
def _workload_end(h: History, **exitcodes: int | None) -> History:
    h.event("phase", "end", 90_000, name="workload",
            producers={name: {"ok": 2, "exitcode": code} for name, code in exitcodes.items()})
    return h


def test_a_producer_that_did_not_end_cleanly_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # a producer SIGKILLed (or crashed) took its unrecorded attempts with it: the clean
    # records prove nothing about those, so the verdict is open, naming the producer
    r = _check(_workload_end(_clean(History()), p0=0, p1=-9), tmp_path / "run")
    assert r["valid"] == "unknown"
    assert [x for x in r["unknown_reasons"] if "did not end cleanly" in x] == [
        "producer process(es) did not end cleanly, so their history may miss attempts: "
        "p1 (exit code -9)"]
    # the same history with every producer ending cleanly (or not saying) is valid
    assert _check(_workload_end(_clean(History()), p0=0, p1=0), tmp_path / "r2")["valid"] is True
    h = _clean(History())
    h.event("phase", "end", 90_000, name="workload", producers={"p0": {"ok": 2}})
    assert _check(h, tmp_path / "r3")["valid"] is True
