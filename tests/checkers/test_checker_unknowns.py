"""VALID where it should be unknown (issue 44, point 8; DESIGN.md §4 "nothing passes
vacuously"): literal known-answer histories whose facts the run could not establish.

- a partition the drain could not finish that holds acknowledged writes, even when a live
  consumer read every one of them (no write is ``unseen``);
- divergence "checked" with no offset compared, or with fewer copies of a partition than
  its replication factor;
- a configured consumer that exited non-zero or died, or that read nothing while its
  partitions held acknowledged writes.

Each history here was VALID before these rules (the commit that added them says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checker_segments import batch, write_log

from checkers import check_run
from contract.events import CONSUMERS_STOPPED
from contract.exit_codes import exit_code_of_results as exit_code
from tests.support.literal import History

pytestmark = pytest.mark.spark

VALUES = [b"a", b"b", b"c", b"d"]


def _writes(h: History, partition: int = 0, n: int = 4) -> History:
    for s in range(n):
        h.write(partition, s, partition=partition, offset=s)
    return h


def _drained(h: History, partition: int = 0, n: int = 4) -> History:
    for s in range(n):
        h.drain(partition, s, partition, s)
    return h


def _consumers(h: History, *specs: tuple[str, str]) -> History:
    h.run.setdefault("workload", {})["consumers"] = [{"id": c, "mode": m} for c, m in specs]
    return h


def _check(h: History, path: Path, logs: dict[str, list[bytes]] | None = None
           ) -> dict[str, Any]:
    root = h.save(path)
    for replica, batches in (logs or {}).items():
        write_log(root, replica, h.topic, 0, batches)
    results = check_run(root)
    assert "error" not in results, results.get("traceback")
    return results


# ---------------------------------------------------------------------- the drain
def test_an_unfinished_partition_with_acknowledged_writes_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # c0 read all four acknowledged writes of t:0; the drain stopped after offset 1 of 4.
    # Nothing is unseen, yet the drain never showed that offsets 2 and 3 still hold them.
    h = _consumers(_writes(History()), ("c0", "assign"))
    for s in range(4):
        h.read("c0", 0, s, 0, s)
    h.drain(0, 0, 0, 0).drain(0, 1, 0, 1)
    # t:1 held only an attempt of unknown outcome: nothing acknowledged, nothing to prove
    h.write(1, 0, partition=1, outcome="info", error="_MSG_TIMED_OUT")
    h.drain_end(complete=False, end_offsets={"t:0": 4, "t:1": 1})
    r = _check(h, tmp_path / "run")
    assert r["anomalies"]["unseen"]["count"] == 0 and r["anomalies"]["lost"]["count"] == 0
    assert r["stats"]["drain"]["incomplete_partitions"] == ["t:0", "t:1"]
    assert r["valid"] == "unknown" and exit_code(r) == 2  # was True
    assert r["unknown_reasons"] == [
        "the drain did not read 1 partition holding acknowledged writes completely, so the "
        "records read there are not known to be in the log still: ['t:0']"]


def test_unseen_writes_keep_their_reason(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _drained(_writes(History()), n=2)
    h.drain_end(complete=False, end_offsets={"t:0": 4})
    r = _check(h, tmp_path / "run")
    assert r["anomalies"]["unseen"]["count"] == 2 and r["valid"] == "unknown"
    assert r["unknown_reasons"] == [
        "2 acknowledged writes are unseen in partitions the drain did not read completely: "
        "['t:0']"]


# ---------------------------------------------------------------------- divergence
def _asked(h: History) -> History:
    h.run["options"] = {"collect_data": True}
    return h.drain_end()


def test_divergence_with_nothing_compared_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # three replicas' directories of t:0, each with an empty segment: logs/data is there,
    # but not one offset was compared
    h = _asked(_drained(_writes(History())))
    r = _check(h, tmp_path / "run", logs={f"broker-{i}": [] for i in (1, 2, 3)})
    div = r["anomalies"]["divergence"]
    assert r["stats"]["divergence"]["offsets_compared"] == 0
    assert div["checked"] is False  # was True
    assert div["reason"] == "no offset of any replica was compared"
    assert r["valid"] == "unknown"  # was True
    assert r["unknown_reasons"] == [
        "divergence not checked: no offset of any replica was compared"]


def test_divergence_with_fewer_copies_than_rf_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # replication.factor 3; two copies of t:0 agree on all four offsets, the third replica's
    # copy is missing (and t:1, also written, has no copy at all)
    h = _drained(_writes(History()))
    h = _asked(_drained(_writes(h, partition=1), partition=1))
    r = _check(h, tmp_path / "run", logs={"broker-1": [batch(0, VALUES)],
                                          "broker-2": [batch(0, VALUES)]})
    div = r["anomalies"]["divergence"]
    assert r["stats"]["divergence"]["offsets_compared"] == 4 and div["count"] == 0
    assert div["checked"] is False  # was True
    assert div["reason"] == ("fewer copies than replication.factor 3 of 2 partitions: "
                             "t:0 (2 copies), t:1 (0 copies)")
    assert r["valid"] == "unknown"  # was True
    assert r["unknown_reasons"] == [f"divergence not checked: {div['reason']}"]


def test_every_copy_compared_is_checked(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _asked(_drained(_writes(History())))
    r = _check(h, tmp_path / "run", logs={f"broker-{i}": [batch(0, VALUES)] for i in (1, 2, 3)})
    assert r["anomalies"]["divergence"]["checked"] is True
    assert "reason" not in r["anomalies"]["divergence"]
    assert r["valid"] is True and "unknown_reasons" not in r


def test_one_copy_at_rf_1_is_not_checked_nor_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # with one replica nothing can diverge: there is no second copy to compare
    h = _drained(_writes(History()))
    h.run["topic_config"] = {"replication.factor": 1, "min.insync.replicas": 1}
    r = _check(h.drain_end(), tmp_path / "run", logs={"broker-1": [batch(0, VALUES)]})
    div = r["anomalies"]["divergence"]
    assert div["checked"] is False
    assert div["reason"] == "replication.factor 1: one copy of each partition, nothing to compare"
    assert r["valid"] is True


# ---------------------------------------------------------------------- consumers
def _stopped(h: History, **exitcodes: int | None) -> History:
    return h.event(CONSUMERS_STOPPED, at_ms=200_000, consumers={
        name: {"reader": name, "polls": 9, "records": 4, "exitcode": code}
        for name, code in exitcodes.items()})


def _read_by(h: History, *readers: str) -> History:
    for c in readers:
        for s in range(4):
            h.read(c, 0, s, 0, s)
    return h


def test_a_consumer_that_did_not_end_cleanly_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _consumers(_drained(_writes(History())), ("c0", "assign"), ("c1", "assign"))
    h = _stopped(_read_by(h, "c0", "c1"), c0=0, c1=-9).drain_end()
    r = _check(h, tmp_path / "run")
    assert r["valid"] == "unknown"  # was True
    assert r["unknown_reasons"] == [
        "consumer process(es) did not end cleanly, so their reads may be missing from the "
        "history: c1 (exit code -9)"]
    # every consumer ending cleanly (or a history from before exits were recorded): valid
    h = _consumers(_drained(_writes(History())), ("c0", "assign"), ("c1", "assign"))
    assert _check(_stopped(_read_by(h, "c0", "c1"), c0=0, c1=0).drain_end(),
                  tmp_path / "r2")["valid"] is True
    h = _consumers(_drained(_writes(History())), ("c0", "assign"))
    assert _check(_read_by(h, "c0").drain_end(), tmp_path / "r3")["valid"] is True


def test_a_consumer_that_read_nothing_of_its_partitions_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # c0 (assign: every partition) read t:0's four acknowledged writes; c1 (assign) read
    # nothing at all, and c2 (subscribe) was assigned t:0 and read nothing
    h = _consumers(_drained(_writes(History())), ("c0", "assign"), ("c1", "assign"),
                   ("c2", "subscribe"))
    h.event("rebalance", at_ms=500, reader="c2", what="assigned", poll=1, partitions=["t:0"])
    h = _read_by(h, "c0").drain_end()
    r = _check(h, tmp_path / "run")
    assert r["stats"]["reads_by_reader"] == {"c0": 4, "drain": 4}
    assert r["valid"] == "unknown"  # was True
    assert r["unknown_reasons"] == [
        "consumer(s) read nothing of partitions holding acknowledged writes they were "
        "given: c1 (assign) t:0 (4 acknowledged), c2 (subscribe) t:0 (4 acknowledged)"]


def test_an_assign_consumer_that_skipped_a_whole_partition_is_unknown(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = _consumers(_drained(_drained(_writes(_writes(History()), partition=1), partition=1)),
                   ("c0", "assign"))
    h = _read_by(h, "c0").drain_end()  # c0 read t:0 only; t:1 had 4 acknowledged writes
    r = _check(h, tmp_path / "run")
    assert r["valid"] == "unknown"  # was True
    assert r["unknown_reasons"] == [
        "consumer(s) read nothing of partitions holding acknowledged writes they were "
        "given: c0 (assign) t:1 (4 acknowledged)"]
    # a test body's own assign consumer (ChaosSession) chose partitions run.json does not
    # list: reading anything is enough, reading nothing is not
    h = _consumers(_drained(_drained(_writes(_writes(History()), partition=1), partition=1)),
                   ("c0", "assign"), ("c1", "assign"))
    h.run["workload"]["source"] = "user"
    r = _check(_read_by(h, "c0").drain_end(), tmp_path / "r2")
    assert r["unknown_reasons"] == [
        "consumer(s) read nothing of partitions holding acknowledged writes they were "
        "given: c1 (assign) t:0 (4 acknowledged), t:1 (4 acknowledged)"]


def test_a_group_member_given_no_partition_may_read_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # two subscribe members, one partition: c1's assignment was empty. A member that never
    # recorded an assignment, though, never joined: its partitions are all of them.
    h = _consumers(_drained(_writes(History())), ("c0", "subscribe"), ("c1", "subscribe"))
    h.event("rebalance", at_ms=500, reader="c0", what="assigned", poll=1, partitions=["t:0"])
    h.event("rebalance", at_ms=500, reader="c1", what="assigned", poll=1, partitions=[])
    h = _read_by(h, "c0").drain_end()
    assert _check(h, tmp_path / "run")["valid"] is True
    h = _consumers(_drained(_writes(History())), ("c0", "subscribe"), ("c1", "subscribe"))
    h.event("rebalance", at_ms=500, reader="c0", what="assigned", poll=1, partitions=["t:0"])
    r = _check(_read_by(h, "c0").drain_end(), tmp_path / "r2")
    assert r["valid"] == "unknown"
    assert r["unknown_reasons"] == [
        "consumer(s) read nothing of partitions holding acknowledged writes they were "
        "given: c1 (subscribe, never assigned) t:0 (4 acknowledged)"]


def test_a_test_bodys_member_that_never_joined_is_not_judged(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A test body's own service (workload.source "user") restarts its consumer; one
    incarnation closed before its first assignment. The built-in workload's member that
    never joined is unknown (above); this one was given nothing the history knows of (a
    suite run of the copy-service example was unknown for it)."""
    h = _consumers(_drained(_writes(History())), ("c0", "subscribe"), ("c1", "subscribe"))
    h.run["workload"]["source"] = "user"
    h.event("rebalance", at_ms=500, reader="c0", what="assigned", poll=1, partitions=["t:0"])
    r = _check(_read_by(h, "c0").drain_end(), tmp_path / "run")
    assert r["valid"] is True, r.get("unknown_reasons")


def test_a_members_silence_is_covered_only_by_its_group_reading_on(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A restarting service's incarnation c1 was given t:0 and crashed before its first
    fetch (a suite run of the copy-service example was unknown for it); the next one, c2,
    read t:0 after c1 had been given it: the group read on, c1's silence hides nothing.
    So does a read of t:0 to its last acknowledged write before c1 was given it: nothing
    acknowledged was left there that the group had not read (a later suite run was unknown
    for that: an incarnation given a partition its group had copied to the end). A read of
    t:0 only before c1 was given it and short of its end, or by a reader of another group,
    does not cover it."""
    def run(*, c2_at_ms: int, c2_group: str, upto: int = 4) -> dict[str, Any]:
        h = _drained(_writes(History()))
        h.run.setdefault("workload", {}).update(source="user", consumers=[
            {"id": "c1", "mode": "subscribe", "group_id": "g"},
            {"id": "c2", "mode": "subscribe", "group_id": c2_group}])
        h.event("rebalance", at_ms=5000, reader="c1", what="assigned", poll=1,
                partitions=["t:0"])
        h.event("rebalance", at_ms=2000, reader="c2", what="assigned", poll=1,
                partitions=["t:0"])
        for s in range(upto):
            h.read("c2", 0, s, 0, s, mode="subscribe", at_ms=c2_at_ms + s)
        return _check(h.drain_end(), tmp_path / f"run-{c2_at_ms}-{c2_group}-{upto}")

    assert run(c2_at_ms=6000, c2_group="g")["valid"] is True  # was unknown
    assert run(c2_at_ms=6000, c2_group="g", upto=1)["valid"] is True
    assert run(c2_at_ms=3000, c2_group="g")["valid"] is True  # was unknown
    silent = ("consumer(s) read nothing of partitions holding acknowledged writes they were "
              "given: c1 (subscribe) t:0 (4 acknowledged)")
    short = run(c2_at_ms=3000, c2_group="g", upto=3)
    assert short["valid"] == "unknown" and short["unknown_reasons"] == [silent]
    other = run(c2_at_ms=6000, c2_group="other")
    assert other["valid"] == "unknown" and other["unknown_reasons"] == [silent]
    other = run(c2_at_ms=3000, c2_group="other")
    assert other["valid"] == "unknown" and other["unknown_reasons"] == [silent]
