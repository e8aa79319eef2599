"""stalled-lso on literal histories: committed writes held behind a last stable offset that
a decided transaction's record holds (checkers/stalled.py), and its KAFKA-20716 tag only
where an unclean election of the partition followed that transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers import check_run
from tests.support.literal import History

pytestmark = pytest.mark.spark

KIND = "stalled-lso"


def _history() -> History:
    h = History()
    h.run["workload"] = {"transactions": {"enabled": True},
                         "drain": {"isolation_level": "read_committed"}}
    h.run["producer_config"]["transactional.id"] = "kc-txn-0"
    h.run["topic_config"].update({"unclean.leader.election.enable": "true",
                                  "min.insync.replicas": 1})

    def txn(p: int, name: str, outcome: str, part: int, first_seq: int, offsets: list[int],
            at_ms: int, drained: bool) -> None:
        for i, off in enumerate(offsets):
            h.write(p, first_seq + i, partition=part, offset=off, txn=name,
                    txn_outcome=outcome, at_ms=at_ms + i)
            if drained:
                h.drain(part, off, p, first_seq + i, at_ms=90_000 + part * 100 + off)

    # Partition 0 (KAFKA-20716): p1:0 committed and read; p1:1 committed on the leader at
    # 4-6 (its marker at 7 only there), the follower elected uncleanly at 9 s holds 4-6
    # without the marker: LSO 4, HW 7. p1:2 at 8-10 only the old leader had: lost, which
    # unclean election allows. p2's committed write at 6 was acknowledged before p1's at
    # that offset (a truncated tail's offset reused): lost, not held.
    txn(1, "kc-txn-1:0", "committed", 0, 0, [0, 1, 2], 1_000, True)
    h.write(2, 0, partition=0, offset=6, txn="kc-txn-2:0", txn_outcome="committed",
            at_ms=1_500)
    txn(1, "kc-txn-1:1", "committed", 0, 3, [4, 5, 6], 2_000, False)
    txn(1, "kc-txn-1:2", "committed", 0, 6, [8, 9, 10], 6_000, False)
    # a live read_committed reader read p1:1's first record on the old leader, once it was
    # committed there: held now, not vanished
    h.read("c0", 0, 4, 1, 3, at_ms=5_500)
    h.observe(0, 0, 1, [1, 2, 3], epoch=0).observe(5_000, 0, 1, [1], epoch=0)
    h.observe(8_000, 0, -1, [1], epoch=0).observe(9_000, 0, 2, [2], epoch=1)
    # Partition 1: held at an offset whose transaction's outcome its producer never
    # learned (it may be open still): not stalled-lso; the writes past it stay lost.
    txn(3, "kc-txn-3:0", "unknown", 1, 0, [0, 1], 2_000, False)
    txn(3, "kc-txn-3:1", "committed", 1, 2, [3, 4], 3_000, False)
    # Partition 2: the stable offset at the high watermark: nothing held.
    txn(4, "kc-txn-4:0", "committed", 2, 0, [0, 1], 2_000, True)
    # Partition 3: held behind a decided (aborted) transaction with no unclean election
    # of the partition observed: stalled-lso, but not the known bug's.
    txn(5, "kc-txn-5:0", "aborted", 3, 0, [0, 1], 2_000, False)
    txn(5, "kc-txn-5:1", "committed", 3, 2, [3, 4], 3_000, False)
    for part in (1, 2, 3):
        h.observe(0, part, 1, [1, 2, 3], epoch=0)
    ends = {"t:0": 4, "t:1": 0, "t:2": 3, "t:3": 0}
    h.drain_end(True, ends, isolation_level="read_committed",
                high_watermarks={"t:0": 7, "t:1": 5, "t:2": 3, "t:3": 6},
                last_stable_offsets=ends)
    return h


def _check(tmp_path: Path, accept: list[str] | None = None) -> dict[str, Any]:
    h = _history()
    if accept:
        h.run["accept_known"] = accept
    r = check_run(h.save(tmp_path / "run"))
    assert "error" not in r, r.get("traceback")
    return r


def test_writes_behind_a_stuck_stable_offset(spark: object, tmp_path: Path) -> None:
    r = _check(tmp_path)
    stalled = r["anomalies"][KIND]
    # before: every write here counted as lost, which unclean election allows (valid)
    assert stalled["count"] == 5 and stalled["allowed"] is False
    by = {(e["producer"], e["seq"]): e for e in stalled["examples"]}
    assert set(by) == {(1, 3), (1, 4), (1, 5), (5, 2), (5, 3)}
    assert stalled["known_bugs"] == {"KAFKA-20716": 3}
    assert {k for k, e in by.items() if "known_bug" in e} == {(1, 3), (1, 4), (1, 5)}
    lost = r["anomalies"]["lost"]
    assert sorted((e["producer"], e["seq"]) for e in lost["examples"]) == [
        (1, 6), (1, 7), (1, 8), (2, 0), (3, 2), (3, 3)]
    assert lost["allowed"] is True
    assert r["anomalies"]["vanished"]["count"] == 0
    assert r["valid"] is False


def test_accepting_the_bug_leaves_its_untagged_records_forbidden(spark: object,
                                                                   tmp_path: Path) -> None:
    r = _check(tmp_path, ["KAFKA-20716"])
    stalled = r["anomalies"][KIND]
    assert stalled["count"] == 5 and stalled["allowed"] is False
    assert r["valid"] is False
