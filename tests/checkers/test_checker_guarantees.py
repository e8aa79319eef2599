"""Known answers for the guarantee model of issue 11: duplicates and reorders under
idempotence, known client bugs, poll skips across rebalances, reused offsets.

Each trap lives in its own topic with its own producer, so one Spark check answers many
small tests (the machine has 2 cores).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark

TIMEOUT = "_MSG_TIMED_OUT"


def _idempotence() -> History:
    h = History()  # acks=all, min ISR 2, enable.idempotence=true
    h.run["versions"] = {"librdkafka": "2.12.0"}  # inside librdkafka#4844's range
    # c1, c2 (not listed): subscribe-mode members of consumer_config's group; c6 another's
    h.run["consumer_config"] = {"group.id": "kc-consumers"}
    h.run["workload"] = {"consumers": [
        {"id": "c4", "mode": "assign", "consumer_config": {"enable.partition.eof": "true"}},
        {"id": "c6", "mode": "subscribe", "consumer_config": {"group.id": "other"}}]}
    # producer 1: seq 0's first copy appended (offset 0), its answer lost; seq 1 ended with
    # _MSG_TIMED_OUT at 7 ms (an epoch bump); the resend was appended at offset 1 and
    # acknowledged there at 9 ms: tagged librdkafka#4953, still forbidden
    t = "dupbump"
    h.write(1, 0, offset=1, at_ms=0, complete_ms=9, topic=t)
    h.write(1, 1, outcome="info", error=TIMEOUT, at_ms=5, topic=t)
    h.drain(0, 0, 1, 0, topic=t).drain(0, 1, 1, 0, topic=t)
    # producer 2: a duplicate, no epoch bump of producer 2 (producer 3 timed out elsewhere)
    t = "dupnobump"
    h.write(2, 0, offset=0, at_ms=0, topic=t)
    h.drain(0, 0, 2, 0, topic=t).drain(0, 1, 2, 0, topic=t)
    h.write(3, 0, outcome="info", error=TIMEOUT, at_ms=5, topic="timeout")
    # producer 4: the later copy was read (by c0 at 10 ms) before producer 4's timeout (50 ms)
    t = "duplate"
    h.write(4, 0, offset=0, at_ms=0, topic=t)
    h.read("c0", 0, 1, 4, 0, at_ms=10, topic=t)
    h.write(4, 1, outcome="info", error=TIMEOUT, at_ms=50, topic=t)
    h.drain(0, 0, 4, 0, topic=t).drain(0, 1, 4, 0, topic=t)
    # producer 5: seq 0 stored after seq 2, with an epoch bump (seq 1 failed at 5 ms) after
    # seq 0's first attempt and before its resend's acknowledgement (9 ms, at offset 1)
    t = "reorderbump"
    h.write(5, 0, offset=1, at_ms=0, complete_ms=9, topic=t)
    h.write(5, 1, outcome="info", error="OUT_OF_ORDER_SEQUENCE_NUMBER", at_ms=3, topic=t)
    h.write(5, 2, offset=0, at_ms=6, topic=t)
    h.drain(0, 0, 5, 2, topic=t).drain(0, 1, 5, 0, topic=t)
    _silent_bumps(h)
    _rebalances(h)
    _truncations(h)
    h.drain_end(complete=True)
    return h


def _epoch(producer: int, epoch: int, since_ms: int | None) -> dict[str, Any]:
    """The detail of a producer-epoch event (workloads/epoch_watch.py)."""
    out: dict[str, Any] = {"producer": producer, "producer_id": 1000 + producer, "epoch": epoch,
                           "epoch_cnt": 1, "bump": epoch > 0,
                           "since_ns": None if since_ms is None else BASE_NS + since_ms * MS}
    if epoch > 0:
        out.update(prev_producer_id=1000 + producer, prev_epoch=epoch - 1)
    return out


def _silent_bumps(h: History) -> None:
    """Duplicates with no failed write; the clients' statistics showed epoch changes."""
    # producer 6: its epoch went 0 -> 1 between the snapshots at 2 and 4 ms, before the
    # later copy's acknowledgement at 6 ms: tagged
    t = "dupsilent"
    h.write(6, 0, offset=1, at_ms=0, complete_ms=6, topic=t)
    h.drain(0, 0, 6, 0, topic=t).drain(0, 1, 6, 0, topic=t)
    h.event("producer-epoch", at_ms=4, targets=[6], **_epoch(6, 1, since_ms=2))
    # producer 7: a client's first id (not a bump), and a bump after the later copy was read
    t = "dupfirstid"
    h.write(7, 0, offset=0, at_ms=0, topic=t)
    h.drain(0, 0, 7, 0, topic=t).drain(0, 1, 7, 0, topic=t)
    h.event("producer-epoch", at_ms=3, targets=[7], **_epoch(7, 0, since_ms=None))
    h.event("producer-epoch", at_ms=60_000, targets=[7], **_epoch(7, 1, since_ms=59_500))


def _truncations(h: History) -> None:
    """Offsets reused after a truncation: the old record gone, or in the log elsewhere
    where the partition shows the truncation; a moved record with no such proof."""
    t = "reuse"  # c0 read (30, 1) at offset 1; the log now holds (30, 2) there
    h.write(30, 0, offset=0, topic=t).write(30, 1, offset=1, topic=t)
    h.read("c0", 0, 0, 30, 0, topic=t).read("c0", 0, 1, 30, 1, topic=t)
    h.write(30, 2, offset=1, topic=t)
    # (the drain reads at the end, after every live read: at 90 s)
    h.drain(0, 0, 30, 0, topic=t, at_ms=90_000).drain(0, 1, 30, 2, topic=t, at_ms=90_001)
    # and c0 read a copy of (30, 0) at offset 2, cut by the same truncation: the log holds
    # (30, 3) there. (30, 0) is still in the log (offset 0), and offset 1 proves the
    # truncation, whose replacement (30, 2) was first read after c0 read offset 2: offset 2
    # was reused too
    h.read("c0", 0, 2, 30, 0, topic=t).write(30, 3, offset=2, topic=t)
    h.drain(0, 2, 30, 3, topic=t, at_ms=90_002)
    t = "moved"  # c0 read (31, 1) at offset 0, the log holds it at 1, no truncation shown
    h.write(31, 0, offset=0, topic=t).write(31, 1, offset=1, topic=t)
    h.read("c0", 0, 0, 31, 1, topic=t)
    h.drain(0, 0, 31, 0, topic=t).drain(0, 1, 31, 1, topic=t)


def _rebalances(h: History) -> None:
    """Poll steps across (or not across) recorded rebalances, topic "rb"."""
    t = "rb"
    for s in range(6):
        h.write(20, s, offset=s, topic=t)
        h.drain(0, s, 20, s, topic=t)
    # c1 (subscribe): 0 -> 1 -> 4 (skip across its rebalance of rb:0 at poll 4, and c2 of
    # its group read the offsets it skipped, 2 and 3: excused)
    # -> 2 (back; its rebalance at poll 6 moved rb:1 only: a violation)
    # -> 5 (skip; only c2's rebalance at poll 8: a violation)
    for off, poll in ((0, 1), (1, 2), (4, 5), (2, 7), (5, 9)):
        h.read("c1", 0, off, 20, off, poll=poll, mode="subscribe", topic=t)
    for off, poll in ((2, 1), (3, 2)):
        h.read("c2", 0, off, 20, off, poll=poll, mode="subscribe", topic=t)
    h.event("rebalance", at_ms=1200, reader="c1", what="assigned", poll=4,
            partitions=[f"{t}:0", f"{t}:1"])
    h.event("rebalance", at_ms=1300, reader="c1", what="revoked", poll=6, partitions=[f"{t}:1"])
    h.event("rebalance", at_ms=1400, reader="c2", what="assigned", poll=8, partitions=[f"{t}:0"])
    # c3 (assign mode) skips 0 -> 3; a rebalance event of c3 does not excuse assign mode
    for off, poll in ((0, 1), (3, 2)):
        h.read("c3", 0, off, 20, off, poll=poll, topic=t)
    h.event("rebalance", at_ms=1500, reader="c3", what="assigned", poll=2, partitions=[f"{t}:0"])
    # c4 (enable.partition.eof=true) moves from 0 to 2: librdkafka#4844's position + 2;
    # c3's 0 -> 3 skipped two offsets: not that bug
    for off, poll in ((0, 1), (2, 2)):
        h.read("c4", 0, off, 20, off, poll=poll, topic=t)
    _group_skips(h)


def _group_skips(h: History) -> None:
    """Skips across the skipping reader's own rebalances, topic "rbg" (offsets 0-7): the
    offsets skipped must each have been read by another reader of its consumer group."""
    t = "rbg"
    for s in range(8):
        h.write(21, s, offset=s, topic=t)
        h.drain(0, s, 21, s, topic=t)
    # c1: 0 -> 3 across its rebalance at poll 2; c2 (its group) read 1 and 2: excused
    # c1: 3 -> 6 across its rebalance at poll 4; c2 read 4, but 5 only c6 (another group)
    #     and the drain: not excused
    for off, poll in ((0, 1), (3, 3), (6, 5)):
        h.read("c1", 0, off, 21, off, poll=poll, mode="subscribe", topic=t)
    for p in (2, 4):
        h.event("rebalance", at_ms=1600 + p, reader="c1", what="assigned", poll=p,
                partitions=[f"{t}:0"])
    # c2: 1 -> 2 -> 4 across its rebalance at poll 12; c1 read 3: excused
    for off, poll in ((1, 10), (2, 11), (4, 13)):
        h.read("c2", 0, off, 21, off, poll=poll, mode="subscribe", topic=t)
    h.event("rebalance", at_ms=1700, reader="c2", what="assigned", poll=12,
            partitions=[f"{t}:0"])
    h.read("c6", 0, 5, 21, 5, poll=1, mode="subscribe", topic=t)


@pytest.fixture(scope="module")
def idem(spark, tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from checkers import check_run

    results = check_run(_idempotence().save(tmp_path_factory.mktemp("idem") / "run"))
    assert "error" not in results, results.get("traceback")
    return results


def _by_topic(results: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {e["topic"]: e for e in results["anomalies"][kind]["examples"]}


def test_duplicates_under_idempotence_are_forbidden_despite_timeouts(idem) -> None:  # type: ignore[no-untyped-def]
    dup = idem["anomalies"]["duplicate"]
    assert dup["count"] == 7 and dup["allowed"] is False  # + (31, 1) of "moved", (30, 0)
    assert dup["why"].startswith("forbidden: enable.idempotence=true")
    assert idem["valid"] is False
    assert idem["stats"]["errors"][TIMEOUT] == 3


def test_duplicate_after_epoch_bump_names_the_known_bug(idem) -> None:  # type: ignore[no-untyped-def]
    ex = _by_topic(idem, "duplicate")
    bumped = ex["dupbump"]
    assert bumped["known_bug"]["id"] == "librdkafka#4953"
    assert bumped["known_bug"]["status"] == "open"
    assert bumped["epoch_bump_ns"] == bumped["complete_ns"] - 2 * MS  # seq 1 ended at 7 ms
    assert "epoch bump of producer 1" in bumped["summary"]
    # no write failed; the statistics showed the bump between 2 and 4 ms: its latest moment
    silent = ex["dupsilent"]
    assert silent["known_bug"]["id"] == "librdkafka#4953"
    assert silent["epoch_bump_ns"] == BASE_NS + 4 * MS
    # no bump of that producer, a first id, or the bump came after the later copy was read
    for topic in ("dupnobump", "duplate", "moved", "dupfirstid"):
        assert "known_bug" not in ex[topic] and "epoch_bump_ns" not in ex[topic], topic


def test_reorder_under_idempotence_forbidden_and_tagged(idem) -> None:  # type: ignore[no-untyped-def]
    ro = idem["anomalies"]["reorder"]
    assert ro["count"] == 1 and ro["allowed"] is False
    (e,) = ro["examples"]
    assert (e["producer"], e["seq"], e["read_offset"], e["other"]["seq"]) == (5, 0, 1, 2)
    assert e["known_bug"]["id"] == "librdkafka#4953"


def test_known_bug_counts_are_exact(idem) -> None:  # type: ignore[no-untyped-def]
    assert idem["anomalies"]["duplicate"]["known_bugs"] == {"librdkafka#4953": 2}
    assert idem["known_bugs"]["librdkafka#4953"]["status"] == "open"
    assert idem["known_bugs"]["librdkafka#4844"]["fixed_in"] == "2.13.2"
    assert idem["anomalies"]["reorder"]["known_bugs"] == {"librdkafka#4953": 1}
    assert idem["anomalies"]["lost"]["known_bugs"] == {}
    assert idem["accepted_known"] == []


def _many_bumped_duplicates(n: int, accept: list[str], stray: bool) -> History:
    """``n`` duplicates of producer 1, all after its epoch bump; ``stray``: one more duplicate
    of producer 2, which never had an epoch-bump error."""
    h = History()
    h.run["accept_known"] = accept
    # each resend acknowledged at its later copy's offset, after the bump at n + 5 ms
    for s in range(n):
        h.write(1, s, offset=2 * s + 1, at_ms=s, complete_ms=n + 10)
    h.write(1, n, outcome="info", error=TIMEOUT, at_ms=n + 3)
    for s in range(n):
        h.drain(0, 2 * s, 1, s).drain(0, 2 * s + 1, 1, s)
    if stray:
        h.write(2, 0, offset=0, partition=1).drain(1, 0, 2, 0).drain(1, 1, 2, 0)
    h.drain_end(complete=True)
    return h


def test_accepted_known_bug_leaves_the_verdict_valid(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_many_bumped_duplicates(40, ["librdkafka#4953"], stray=False))
    dup = r["anomalies"]["duplicate"]
    assert dup["count"] == 40 and dup["known_bugs"] == {"librdkafka#4953": 40}
    assert len(dup["examples"]) == 32  # capped; the counts are exact
    assert dup["allowed"] is True and dup["accepted"] == 40
    assert dup["why"].startswith("accepted: 40 match known bugs this run accepts")
    assert r["valid"] is True and r["accepted_known"] == ["librdkafka#4953"]
    assert "accepts known bugs librdkafka#4953" in r["guarantees"]["duplicate"]
    assert all(e["known_bug"] == {"id": "librdkafka#4953", "status": "open", "accepted": True,
                                  "link": "https://github.com/confluentinc/librdkafka/issues/4953"}
               for e in dup["examples"])


def test_one_unexplained_record_keeps_an_accepted_kind_forbidden(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_many_bumped_duplicates(40, ["librdkafka#4953"], stray=True))
    dup = r["anomalies"]["duplicate"]
    assert dup["count"] == 41 and dup["known_bugs"] == {"librdkafka#4953": 40}
    assert dup["allowed"] is False and dup["accepted"] == 40
    assert "1 of 41 neither" in dup["why"]
    assert r["valid"] is False
    # the one that fails the verdict is shown first, even past the 32-example cap
    assert dup["examples"][0]["producer"] == 2 and "known_bug" not in dup["examples"][0]
    assert sum(1 for e in dup["examples"] if "known_bug" not in e) == 1


def test_unaccepted_known_bug_is_a_violation(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_many_bumped_duplicates(3, [], stray=False))
    dup = r["anomalies"]["duplicate"]
    assert dup["known_bugs"] == {"librdkafka#4953": 3} and dup["allowed"] is False
    assert "accepted" not in dup and r["valid"] is False
    assert dup["examples"][0]["known_bug"]["accepted"] is False
    assert "matches known bug librdkafka#4953 (open)" in dup["examples"][0]["summary"]


def test_poll_steps_are_excused_only_across_a_rebalance_of_that_partition(idem) -> None:  # type: ignore[no-untyped-def]
    skips = idem["anomalies"]["poll-skip"]
    # rb's 4 (one excused) and rbg's 3 (two excused: see test_skip_is_excused_only_...)
    assert skips["count"] == 7 and skips["excused"] == 3 and skips["allowed"] is False
    got = {(e["reader"], e["prev_offset"], e["offset"]): e for e in skips["examples"]
           if e["topic"] == "rb"}
    assert set(got) == {("c1", 1, 4), ("c1", 2, 5), ("c3", 0, 3), ("c4", 0, 2)}
    assert skips["known_bugs"] == {"librdkafka#4844": 1}
    assert got[("c4", 0, 2)]["known_bug"]["id"] == "librdkafka#4844"
    assert "known_bug" not in got[("c3", 0, 3)]
    assert got[("c1", 1, 4)]["excused"] is True
    assert got[("c1", 1, 4)]["rebalances"] == [{"poll": 4, "what": "assigned"}]
    assert (got[("c1", 1, 4)]["prev_poll"], got[("c1", 1, 4)]["poll"]) == (2, 5)
    assert "across its rebalance assigned at poll 4" in got[("c1", 1, 4)]["summary"]
    assert got[("c1", 2, 5)]["excused"] is False and got[("c3", 0, 3)]["excused"] is False
    assert "rebalances" not in got[("c1", 2, 5)]
    # forbidden ones first (unexplained, then a known bug's), excused last
    assert [e["excused"] for e in skips["examples"]] == [False] * 4 + [True] * 3
    assert skips["examples"][3]["reader"] == "c4"
    back = idem["anomalies"]["nonmonotonic-poll"]
    assert back["count"] == 1 and "excused" not in back and back["allowed"] is False
    assert (back["examples"][0]["prev_offset"], back["examples"][0]["offset"]) == (4, 2)
    assert "(3 excused (was by a subscribe-mode reader" in skips["why"]
    assert "another reader of its consumer group read each offset it skipped" in skips["why"]
    assert "4 of 7 neither" in skips["why"]


def test_skip_is_excused_only_when_its_group_read_each_skipped_offset(idem) -> None:  # type: ignore[no-untyped-def]
    # issue 44 point 6: a skip across the reader's rebalance used to be excused whoever read
    # the offsets skipped (the unchanged checker: poll-skip count 7, excused 4)
    skips = idem["anomalies"]["poll-skip"]
    got = {(e["reader"], e["prev_offset"], e["offset"]): e for e in skips["examples"]
           if e["topic"] == "rbg"}
    assert {k: e["excused"] for k, e in got.items()} == {
        ("c1", 0, 3): True, ("c2", 2, 4): True, ("c1", 3, 6): False}
    assert got[("c1", 0, 3)]["excuse"] == "rebalance"
    assert got[("c1", 0, 3)]["rebalances"] == [{"poll": 2, "what": "assigned"}]
    # crossed its rebalance at poll 4, but offset 5 reached only another group
    assert "excuse" not in got[("c1", 3, 6)] and "rebalances" not in got[("c1", 3, 6)]
    assert "known_bug" not in got[("c1", 3, 6)]
    assert skips["known_bugs"] == {"librdkafka#4844": 1}


def test_rebalances_are_not_faults(idem) -> None:  # type: ignore[no-untyped-def]
    for e in idem["anomalies"]["poll-skip"]["examples"]:
        assert all(f["kind"] != "rebalance" for f in e["faults_at_missing"])


def test_reused_offset_after_truncation_is_forbidden_where_loss_is(idem) -> None:  # type: ignore[no-untyped-def]
    a = idem["anomalies"]["reused-offset"]
    assert a["count"] == 2 and a["allowed"] is False and a["why"].startswith("forbidden")
    e, copy = sorted(a["examples"], key=lambda x: x["offset"])
    assert (e["topic"], e["offset"], e["producer"], e["seq"]) == ("reuse", 1, 30, 2)
    assert e["vanished"] == {"producer": 30, "seq": 1} and e["excused"] is False
    assert "offset was reused" in e["summary"]
    assert (copy["topic"], copy["offset"], copy["producer"], copy["seq"]) == ("reuse", 2, 30, 3)
    assert copy["vanished"] == {"producer": 30, "seq": 0} and copy["excused"] is False
    incons = idem["anomalies"]["inconsistent-offset"]
    assert incons["count"] == 1 and incons["examples"][0]["topic"] == "moved"
    assert idem["anomalies"]["lost"]["count"] == 0  # c0 read (30, 1): not lost, vanished
    van = idem["anomalies"]["vanished"]
    assert van["count"] == 1 and van["allowed"] is False
    assert (van["examples"][0]["producer"], van["examples"][0]["seq"]) == (30, 1)


def _acks1_truncation(unclean: bool) -> History:
    """acks=1: c0 read seqs 0-2; after a leader failover the tail 1..2 is gone and seq 3
    took offset 1."""
    h = History()
    h.run["producer_config"] = {"acks": "1", "enable.idempotence": False}
    if unclean:
        h.config("topic_config", unclean_leader_election_enable=True)
    h.write(0, 0, offset=0).write(0, 1, offset=1).write(0, 2, offset=2)
    h.read("c0", 0, 0, 0, 0).read("c0", 0, 1, 0, 1).read("c0", 0, 2, 0, 2)
    h.write(0, 3, offset=1)
    h.drain(0, 0, 0, 0).drain(0, 1, 0, 3)
    h.drain_end(complete=True)
    return h


def test_consumed_records_never_vanish_with_clean_election_whatever_acks(check) -> None:  # type: ignore[no-untyped-def]
    """acks=1 allows losing what no reader saw, not what a reader was served: that lay below
    the high watermark, on every in-sync replica (was allowed by acks=1 before)."""
    r = check(_acks1_truncation(unclean=False))
    a = r["anomalies"]["reused-offset"]
    assert a["count"] == 1 and a["allowed"] is False
    assert a["why"].startswith("forbidden: unclean.leader.election.enable=false")
    v = r["anomalies"]["vanished"]
    assert v["count"] == 2 and v["allowed"] is False
    assert {(e["seq"], e["read_offset"]) for e in v["examples"]} == {(1, 1), (2, 2)}
    assert r["anomalies"]["lost"]["count"] == 0 and r["anomalies"]["lost"]["allowed"] is True
    assert r["anomalies"]["inconsistent-offset"]["count"] == 0
    assert r["valid"] is False


def test_vanished_and_reused_offsets_allowed_with_unclean_election(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_acks1_truncation(unclean=True))
    for kind, n in (("reused-offset", 1), ("vanished", 2)):
        a = r["anomalies"][kind]
        assert a["count"] == n and a["allowed"] is True, kind
        assert a["why"].startswith("allowed: unclean.leader.election.enable=true"), kind
    assert r["valid"] is True


def test_truncated_tail_read_live_is_no_reorder(check) -> None:  # type: ignore[no-untyped-def]
    """Unclean election with idempotence: a live reader read seqs 1-2 at offsets 1-2; the
    tail vanished and seqs 3-4 took those offsets. The order of the log that is (the
    drain's) is fine: reused offsets, allowed by unclean election, no reorder (which
    idempotence forbids) from the vanished records' old offsets."""
    h = History().config("topic_config", min_insync_replicas=1,
                         unclean_leader_election_enable=True)
    for s in range(3):
        h.write(0, s, offset=s).read("c0", 0, s, 0, s)
    h.write(0, 3, offset=1).write(0, 4, offset=2)
    for off, s in ((0, 0), (1, 3), (2, 4)):
        h.drain(0, off, 0, s)
    h.drain_end(complete=True)
    r = check(h)
    assert r["anomalies"]["reused-offset"]["count"] == 2
    assert r["anomalies"]["reused-offset"]["allowed"] is True
    assert r["anomalies"]["reorder"]["count"] == 0
    assert r["anomalies"]["lost"]["count"] == 0 and r["anomalies"]["duplicate"]["count"] == 0
    assert r["valid"] is True


def test_reset_to_the_truncation_point_is_excused_and_named(check) -> None:  # type: ignore[no-untyped-def]
    """c0 read seqs 0-2 at offsets 0-2; the tail 1-2 vanished and seqs 3-4 took its offsets;
    c0 was reset to offset 1 and read them (a step back onto a reused offset: excused,
    named). c1 also steps back, but onto offset 0, which still holds what it read: forbidden."""
    h = History().config("topic_config", min_insync_replicas=1)
    for s in range(3):
        h.write(0, s, offset=s).read("c0", 0, s, 0, s).read("c1", 0, s, 0, s)
    h.write(0, 3, offset=1).write(0, 4, offset=2)
    h.read("c0", 0, 1, 0, 3).read("c0", 0, 2, 0, 4)
    h.read("c1", 0, 0, 0, 0)
    for off, s in ((0, 0), (1, 3), (2, 4)):
        h.drain(0, off, 0, s)
    h.drain_end(complete=True)
    r = check(h)
    back = r["anomalies"]["nonmonotonic-poll"]
    assert back["count"] == 2 and back["excused"] == 1 and back["allowed"] is False
    got = {e["reader"]: e for e in back["examples"]}
    assert (got["c0"]["prev_offset"], got["c0"]["offset"]) == (2, 1)
    assert got["c0"]["excused"] is True and got["c0"]["excuse"] == "truncation"
    assert "truncation point" in got["c0"]["summary"] and "rebalances" not in got["c0"]
    assert got["c1"]["excused"] is False and "excuse" not in got["c1"]
    assert r["anomalies"]["reused-offset"]["count"] == 2
    assert r["anomalies"]["reorder"]["count"] == 0 and r["valid"] is False


def test_a_librdkafka_bug_names_nothing_another_client_wrote(check) -> None:  # type: ignore[no-untyped-def]
    """The history the accepted-bug test checks, written by the Java client (run.json
    versions.client): librdkafka did not write it, so its bug explains none of the copies
    and accepting it changes nothing. Old checker: 40 named and accepted, VALID."""
    h = _many_bumped_duplicates(40, ["librdkafka#4953"], stray=False)
    h.run["versions"] = {**h.run.get("versions", {}), "client": "java",
                         "client_version": "4.1.1", "librdkafka": None}
    dup = check(h)["anomalies"]["duplicate"]
    assert dup["count"] == 40 and dup["known_bugs"] == {} and dup["allowed"] is False
    assert all("known_bug" not in e for e in dup["examples"])
