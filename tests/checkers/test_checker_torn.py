"""torn-transaction on literal histories: a transaction whose producer does not know its
outcome, visible in part to read_committed readers (checkers/torn.py), and its KAFKA-17754
tag when a fault that delays requests came just before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers import check_run
from tests.support.literal import History

pytestmark = pytest.mark.spark

KIND = "torn-transaction"


def _history(transactional: bool) -> History:
    h = History()
    if transactional:
        h.run["workload"] = {"transactions": {"enabled": True}}
    ends: dict[str, int] = {}

    def txn(p: int, name: str, outcome: str, seen: list[bool], topic: str, at_ms: int,
            drained: bool = True) -> None:
        """Writes of one transaction in their own topic; ``seen``: which the drain read."""
        ends[f"{topic}:0"] = sum(seen) if drained else sum(seen) + 5
        for s, visible in enumerate(seen):
            h.write(p, s, offset=s if visible else None, txn=name, txn_outcome=outcome, topic=topic,
                    at_ms=at_ms + s, outcome="ok" if visible else "fail",
                    error=None if visible else "INVALID_TXN_STATE")
            if visible:
                h.drain(0, s, p, s, topic=topic, at_ms=90_000 + at_ms + s)

    # decided early by a stale EndTxn: 3 of 4 visible, the 4th rejected; a hold just before
    txn(1, "p1:7", "unknown", [True, True, True, False], "stale", at_ms=20_000)
    h.event("hold", "start", at_ms=12_000, targets=[1, 2, 3], target="all", hold_s=6.0)
    h.event("hold", "end", at_ms=18_000, targets=[1, 2, 3], target="all")
    # the same shape 40 s after any fault: torn, but nothing known explains it
    txn(2, "p2:3", "unknown", [True, False], "late", at_ms=60_000)
    # unknown outcome, wholly visible or wholly invisible: what Kafka promises
    txn(3, "p3:1", "unknown", [True, True], "whole", at_ms=30_000)
    txn(4, "p4:1", "unknown", [False, False], "none", at_ms=30_000)
    # partly visible, but the drain did not finish the partition: not known to be torn
    txn(5, "p5:1", "unknown", [True, False], "unfinished", at_ms=30_000, drained=False)
    # an aborted transaction partly visible is an aborted read, not a torn transaction
    txn(6, "p6:1", "aborted", [True, False], "abort", at_ms=30_000)
    h.drain_end(complete=False, end_offsets=ends)
    return h


def _check(tmp_path: Path, transactional: bool, drain: str = "read_committed") -> dict[str, Any]:
    h = _history(transactional)
    h.run.setdefault("workload", {})["drain"] = {"isolation_level": drain}
    run = h.save(tmp_path / f"t{transactional}{drain}")
    r = check_run(run)
    assert "error" not in r, r.get("traceback")
    r["_run"] = run
    return r


def test_torn_transactions_found_and_tagged(spark: object, tmp_path: Path) -> None:
    r = _check(tmp_path, True)
    torn = r["anomalies"][KIND]
    assert torn["count"] == 4 and torn["allowed"] is False
    # the stale-EndTxn shape right after a hold is KAFKA-17754; the late one is not
    assert torn["known_bugs"] == {"KAFKA-17754": 3}
    by = {(e["producer"], e["seq"]): e for e in torn["examples"]}
    assert set(by) == {(1, 0), (1, 1), (1, 2), (2, 0)}
    ex = by[(1, 0)]
    assert ex["txn"] == "p1:7" and ex["txn_outcome"] == "unknown"
    assert ex["missing"] == {"producer": 1, "seq": 3}
    assert ex["known_bug"]["id"] == "KAFKA-17754"
    assert [f["kind"] for f in ex["faults_during_txn"]] == ["hold"]
    assert "seq 3 of the same transaction never was" in ex["summary"]
    assert "known_bug" not in by[(2, 0)] and by[(2, 0)]["faults_during_txn"] == []
    assert r["valid"] is False
    # the aborted one is an aborted read (also after no fault: untagged)
    assert [(e["producer"], e["seq"]) for e in r["anomalies"]["aborted-read"]["examples"]] \
        == [(6, 0)]
    # the report shows the kind and its examples
    from reports import render_run

    html = Path(render_run(r["_run"])).read_text()
    assert f'data-kind="{KIND}" data-count="4"' in html
    assert "transaction p1:7 was read by a read_committed reader" in html


def test_not_examined_without_transactions(spark: object, tmp_path: Path) -> None:
    # the same rows from a run with no transactional producer: txn fields mean nothing
    r = _check(tmp_path, False)
    assert r["anomalies"][KIND]["count"] == 0


def test_not_examined_without_a_read_committed_drain(spark: object, tmp_path: Path) -> None:
    # a read_uncommitted drain also reads what a transaction never committed: the count is
    # not proof of anything, and says so (an expectation of 0 is then not met)
    r = _check(tmp_path, True, drain="read_uncommitted")
    torn = r["anomalies"][KIND]
    assert torn["count"] == 0 and torn["checked"] is False
    assert "read_uncommitted" in torn["reason"]
    assert "checked" not in _check(tmp_path, True)["anomalies"][KIND]
