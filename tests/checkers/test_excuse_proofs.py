"""Every excuse is a proof (issue 44): literal histories where the checker said VALID while
the broker broke its promise. Each one failed on the checker before the change (noted per
test); the counts are exact.

The rules (checkers/README.md): librdkafka#4953 names a duplicate or reorder only when the
producer's epoch bump lies after the record's first attempt and before both its
acknowledgement (at the later copy's offset) and that copy's append; a power loss excuses a
record only when every replica in its ISR from the acknowledgement to the crash lost power
and the record lay at or above each one's recovery point; a record a reader returned that is
gone from the drained log is ``vanished``; min.insync.replicas=1 alone allows nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History

pytestmark = pytest.mark.spark

TIMEOUT = "_MSG_TIMED_OUT"


def _power_loss(h: History, at_ms: int, nodes: list[int], topic: str,
                recovery: dict[int, int], isr: list[int]) -> None:
    """A power loss of ``nodes`` that cut ``topic``-0 back to ``recovery`` (node -> recovery
    point) and a restart; the ISR just before it was ``isr``."""
    lost = {str(n): {f"{topic}-0": {"recovery_point": rp, "removed_batches": 3,
                                    "removed_bytes": 300}} for n, rp in recovery.items()}
    h.event("power-loss", "start", at_ms, targets=[f"kafka-{n}" for n in nodes], lost=lost,
            isr_before={f"{topic}:0": isr})
    h.event("power-loss", "end", at_ms + 2000, targets=[f"kafka-{n}" for n in nodes])


def _broken_promises(version: str, accept: list[str]) -> History:
    h = History()  # acks=all, min.insync.replicas=2, clean election, idempotence on
    h.run["versions"] = {"kafka": version, "librdkafka": "2.12.0"}
    h.run["accept_known"] = accept
    # producer 1: the later copy (offset 1) was appended and acknowledged at 2 ms; producer
    # 1 timed out on another topic at 52 ms; the drain read the copy at 100 s. The old
    # window (first attempt .. first read of the later copy) named librdkafka#4953
    t = "dupafter"
    h.write(1, 0, offset=1, at_ms=0, topic=t)
    h.write(1, 1, outcome="info", error=TIMEOUT, at_ms=50, topic="other")
    h.drain(0, 0, 1, 0, topic=t).drain(0, 1, 1, 0, topic=t)
    # producer 2: seq 0 never answered, its copies at offsets 0 and 1; seq 1 acknowledged at
    # offset 2 at 10 ms, so offset 1 was appended before 10 ms; the bump (seq 2 timed out)
    # came at 30 ms: it cannot have made the copy
    t = "dupappend"
    h.write(2, 0, outcome="info", at_ms=0, complete=False, topic=t)
    h.write(2, 1, offset=2, at_ms=8, topic=t)
    h.write(2, 2, outcome="info", error=TIMEOUT, at_ms=28, topic="other")
    h.drain(0, 0, 2, 0, topic=t).drain(0, 1, 2, 0, topic=t).drain(0, 2, 2, 1, topic=t)
    # producer 3: c0 read seqs 0-4; the drain, complete, finds offsets 0-2 only: the tail a
    # reader was served vanished after the last write (zero anomalies before)
    t = "tail"
    for s in range(5):
        h.write(3, s, offset=s, at_ms=100 + s, topic=t).read("c0", 0, s, 3, s, topic=t)
    for s in range(3):
        h.drain(0, s, 3, s, topic=t)
    # producer 4: seqs 0-3 acknowledged while replicas 1-3 were in sync; the ISR shrank to
    # 1, which lost power and everything from offset 1: KIP-966's last replica standing.
    # Replicas 2 and 3 held the records and never lost power: no excuse (was excused by the
    # ISR at the crash alone)
    t = "kip"
    h.observe(150, 0, 1, [1, 2, 3], topic=t).observe(300, 0, 1, [1], topic=t)
    for s in range(4):
        h.write(4, s, offset=s, at_ms=200 + s, topic=t)
    _power_loss(h, 400, [1], t, {1: 1}, [1])
    h.drain(0, 0, 4, 0, topic=t)
    # producer 5: all three replicas in sync throughout lost power; replicas 1 and 2 kept
    # offsets below 2, replica 3 below 3: only offset 3 is gone from every one of them
    t = "whole"
    h.observe(150, 0, 1, [1, 2, 3], topic=t)
    for s in range(4):
        h.write(5, s, offset=s, at_ms=200 + s, topic=t)
    _power_loss(h, 450, [1, 2, 3], t, {1: 2, 2: 2, 3: 3}, [1, 2, 3])
    h.drain(0, 0, 5, 0, topic=t).drain(0, 1, 5, 1, topic=t)
    h.drain_end(complete=True, end_offsets={"tail:0": 3})
    return h


@pytest.fixture(scope="module")
def broken(spark, tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from checkers import check_run

    results = check_run(_broken_promises("3.9.1", []).save(
        tmp_path_factory.mktemp("broken") / "run"))
    assert "error" not in results, results.get("traceback")
    return results


def _by_topic(results: dict[str, Any], kind: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in results["anomalies"][kind]["examples"]:
        out.setdefault(e["topic"], []).append(e)
    return out


def test_a_bump_after_the_copy_was_acknowledged_or_appended_names_no_client_bug(broken) -> None:  # type: ignore[no-untyped-def]
    """Old checker: {"librdkafka#4953": 2}."""
    dup = broken["anomalies"]["duplicate"]
    assert dup["count"] == 2 and dup["known_bugs"] == {}
    assert set(_by_topic(broken, "duplicate")) == {"dupafter", "dupappend"}
    assert all("epoch_bump_ns" not in e for e in dup["examples"])


def test_records_a_reader_was_served_that_vanish_are_counted(broken) -> None:  # type: ignore[no-untyped-def]
    """Old checker: no kind held them (zero anomalies for the tail topic)."""
    van = broken["anomalies"]["vanished"]
    assert van["count"] == 2 and van["allowed"] is False
    assert sorted((e["seq"], e["read_offset"]) for e in van["examples"]) == [(3, 3), (4, 4)]
    assert all(e["topic"] == "tail" for e in van["examples"])
    assert "tail" not in _by_topic(broken, "lost")


def test_power_loss_excuses_only_records_every_isr_member_since_the_ack_lost(broken) -> None:  # type: ignore[no-untyped-def]
    """Old checker: all five lost records excused (count 5, excused 5, VALID but for the
    others)."""
    lost = broken["anomalies"]["lost"]
    assert lost["count"] == 5 and lost["excused"] == 1 and lost["allowed"] is False
    got = _by_topic(broken, "lost")
    assert sorted(e["acked_offset"] for e in got["kip"]) == [1, 2, 3]
    whole = sorted(got["whole"], key=lambda e: e["acked_offset"])
    assert [(e["acked_offset"], e["excused"]) for e in whole] == [(2, False), (3, True)]
    assert next(e for e in got["whole"] if e["excused"])["excuse"] == "power-loss"
    # the ISR at the crash lost them, replicas out of it kept them: KIP-966 on 3.9
    assert lost["known_bugs"] == {"KIP-966": 3}
    assert all(e["known_bug"]["id"] == "KIP-966" for e in got["kip"])
    assert broken["valid"] is False


def test_kip966_losses_pass_only_when_the_run_accepts_them(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    h.run["versions"] = {"kafka": "3.9.1"}
    h.run["accept_known"] = ["KIP-966"]
    t = "kip"
    h.observe(150, 0, 1, [1, 2, 3], topic=t).observe(300, 0, 1, [1], topic=t)
    for s in range(4):
        h.write(4, s, offset=s, at_ms=200 + s, topic=t)
    _power_loss(h, 400, [1], t, {1: 1}, [1])
    h.drain(0, 0, 4, 0, topic=t).drain_end(complete=True)
    r = check(h)
    lost = r["anomalies"]["lost"]
    assert (lost["count"], lost["accepted"], lost["allowed"]) == (3, 3, True)
    assert r["valid"] is True
    # the same losses on a version with Eligible Leader Replicas are Kafka's
    h.run["versions"] = {"kafka": "4.1.1"}
    r = check(h)
    assert r["anomalies"]["lost"]["known_bugs"] == {} and r["valid"] is False


def _unclean_recovery(leader_after: int, hit: list[int], isr_after_ack: list[int]) -> History:
    """Kafka 4.3.1, replicas 1-3 in sync when seqs 0-3 were acknowledged (offsets 0-3) and
    c0 read offset 2; the ISR was ``isr_after_ack`` at the power loss of ``hit``, which cut
    replica 1 back to offset 1 and the others to 3; ``leader_after`` led first after it."""
    h = History()
    h.run["versions"] = {"kafka": "4.3.1", "librdkafka": "2.12.0"}
    h.run["accept_known"] = ["KAFKA-15580"]
    h.observe(150, 0, 2, [1, 2, 3])
    for s in range(4):
        h.write(1, s, offset=s, at_ms=200 + s)
    h.read("c0", 0, 2, 1, 2, at_ms=250)
    h.observe(300, 0, 2, isr_after_ack)
    _power_loss(h, 400, hit, h.topic, {n: (1 if n == 1 else 3) for n in hit}, isr_after_ack)
    h.observe(3000, 0, leader_after, [leader_after])
    h.drain(0, 0, 1, 0, at_ms=90_000).drain_end(complete=True)
    return h


def test_a_replica_that_kept_the_record_truncated_to_the_elected_one(check) -> None:  # type: ignore[no-untyped-def]
    """Every replica lost power; replica 1 lost offsets 1-3, replicas 2 and 3 kept 1 and 2.
    The controller elected replica 1 (the last known leader, not the longest log), so 2 and
    3 truncated to it: KAFKA-15580, named per record. Offset 3 every replica lost: the
    power loss's own. Old checker: no such entry (known_bugs {}, INVALID although the run
    accepted it)."""
    r = check(_unclean_recovery(1, [1, 2, 3], [1, 2, 3]))
    lost, van = r["anomalies"]["lost"], r["anomalies"]["vanished"]
    assert sorted((e["acked_offset"], e["excused"]) for e in lost["examples"]) == [
        (1, False), (3, True)]
    assert lost["known_bugs"] == {"KAFKA-15580": 1} and lost["accepted"] == 1
    assert [(e["read_offset"], e["known_bug"]["id"]) for e in van["examples"]] == [
        (2, "KAFKA-15580")]
    assert van["accepted"] == 1 and r["valid"] is True


@pytest.mark.parametrize(("leader_after", "hit", "isr_after_ack"), [
    (2, [1, 2, 3], [1, 2, 3]),  # the elected replica kept offsets 1 and 2
    (1, [1, 2], [1, 2]),  # replica 3 was in sync at the acks and never lost power
], ids=["elected-kept-it", "an-isr-member-since-the-ack-was-not-hit"])
def test_unclean_recovery_names_only_what_the_elected_replica_lost(  # type: ignore[no-untyped-def]
        check, leader_after, hit, isr_after_ack) -> None:
    r = check(_unclean_recovery(leader_after, hit, isr_after_ack))
    lost, van = r["anomalies"]["lost"], r["anomalies"]["vanished"]
    assert lost["count"] == 2 and van["count"] == 1
    assert lost["known_bugs"] == {} and van["known_bugs"] == {}
    assert r["valid"] is False


def test_min_insync_one_allows_only_the_lone_leaders_own_power_loss(check) -> None:  # type: ignore[no-untyped-def]
    """acks=all, min.insync.replicas=1, clean election: a lost write with no power loss is
    Kafka's (old checker: allowed wholesale by min.insync.replicas=1)."""
    h = History().config("topic_config", min_insync_replicas=1)
    h.write(1, 0, offset=0, topic="lone").drain(0, 1, 1, 1, topic="lone")
    h.write(1, 1, offset=1, topic="lone")
    t = "lonepower"  # acknowledged by the lone in-sync leader, which lost power
    h.observe(150, 0, 1, [1], topic=t)
    h.write(2, 0, offset=0, at_ms=200, topic=t).write(2, 1, offset=1, at_ms=201, topic=t)
    _power_loss(h, 400, [1], t, {1: 0}, [1])
    h.drain_end(complete=True)
    r = check(h)
    lost = r["anomalies"]["lost"]
    assert lost["count"] == 3 and lost["excused"] == 2 and lost["allowed"] is False
    assert lost["why"].startswith("forbidden: acks=all, min.insync.replicas=1")
    assert [e["topic"] for e in lost["examples"] if not e["excused"]] == ["lone"]
    assert r["valid"] is False


def test_copies_in_batches_of_one_epoch_are_the_brokers_not_the_clients(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two duplicates in librdkafka#4953's window. The segments show one resent under a
    bumped epoch (tagged) and one appended twice with the same producer id, epoch and base
    sequence: a deduplication failure, named as the broker's (old checker: both tagged)."""
    from checker_segments import batch, write_log

    from checkers import check_run

    h = History()
    for producer, topic in ((1, "dedup"), (2, "resend")):
        h.write(producer, 0, offset=1, at_ms=0, complete_ms=9, topic=topic)
        h.write(producer, 1, outcome="info", error=TIMEOUT, at_ms=5, topic=topic)
        h.drain(0, 0, producer, 0, topic=topic).drain(0, 1, producer, 0, topic=topic)
    h.drain_end(complete=True)
    run = h.save(tmp_path / "run")
    write_log(run, "1", "dedup", 0, [batch(0, [b"a"], producer_id=1000, producer_epoch=0,
                                           base_sequence=0),
                                     batch(1, [b"a"], producer_id=1000, producer_epoch=0,
                                           base_sequence=0)])
    write_log(run, "1", "resend", 0, [batch(0, [b"a"], producer_id=2000, producer_epoch=0,
                                            base_sequence=0),
                                      batch(1, [b"a"], producer_id=2000, producer_epoch=1,
                                            base_sequence=0)])
    r = check_run(run)
    dup = r["anomalies"]["duplicate"]
    assert dup["count"] == 2 and dup["known_bugs"] == {"librdkafka#4953": 1}
    assert dup["findings"] == {"broker-deduplication-failure": 1}
    got = {e["topic"]: e for e in dup["examples"]}
    assert got["dedup"]["finding"] == "broker-deduplication-failure"
    assert "known_bug" not in got["dedup"] and "appended one batch twice" in got["dedup"]["summary"]
    assert got["dedup"]["batches"] == [{"producer_id": 1000, "producer_epoch": 0,
                                        "base_sequence": 0}] * 2
    assert got["resend"]["known_bug"]["id"] == "librdkafka#4953" and "finding" not in got["resend"]


def test_a_truncation_explains_only_offsets_at_or_above_its_lowest_vanished_one(check) -> None:  # type: ignore[no-untyped-def]
    """c0 read (40, 1) at offset 0, where the log holds (40, 0) and (40, 1) sits at offset 1:
    readers disagree about offset 0. The partition's only vanished record was at offset 5:
    a truncation there removed a tail from 5 on, and cannot explain offset 0 (the old
    checker took any vanished offset of the partition as proof: reused-offset 2)."""
    h = History()
    t = "farmoved"
    for s in range(5):
        h.write(40, s, offset=s, topic=t).drain(0, s, 40, s, topic=t)
    h.write(40, 5, offset=5, topic=t).write(40, 6, offset=5, topic=t)
    h.read("c0", 0, 0, 40, 1, topic=t).read("c0", 0, 5, 40, 5, topic=t)
    h.drain(0, 5, 40, 6, topic=t).drain_end(complete=True)
    r = check(h)
    assert r["anomalies"]["reused-offset"]["count"] == 1
    assert r["anomalies"]["reused-offset"]["examples"][0]["offset"] == 5
    incons = r["anomalies"]["inconsistent-offset"]
    assert incons["count"] == 1 and incons["examples"][0]["offset"] == 0
    assert r["anomalies"]["vanished"]["count"] == 1


@pytest.mark.parametrize(("old_read_ms", "reused", "inconsistent"), [(1500, 2, 0), (3000, 1, 1)])
def test_a_truncation_explains_only_old_records_read_before_it(  # type: ignore[no-untyped-def]
        check, old_read_ms: int, reused: int, inconsistent: int) -> None:
    """The log lost (40, 5) at offset 5 to a truncation: c0 read it at 1 s, c1 read its
    replacement (40, 6) there at 2 s, so the truncation lay between. c0 also read (40, 8) at
    offset 6, where the log now holds (40, 7) ((40, 8) sits at 7). Read at 1.5 s, before the
    replacement was, the truncation explains it (reused-offset); read at 3 s, after, it is a
    reader served a log that no longer was: inconsistent-offset (the old checker took any
    offset at or above a vanished one as reused: reused-offset 2 either way)."""
    h = History()
    t = "latetrunc"
    for s in range(5):
        h.write(40, s, offset=s, topic=t).drain(0, s, 40, s, topic=t, at_ms=90_000 + s)
    h.write(40, 5, offset=5, topic=t).write(40, 6, offset=5, topic=t)
    h.write(40, 7, offset=6, topic=t).write(40, 8, offset=7, topic=t)
    h.read("c0", 0, 5, 40, 5, topic=t, at_ms=1000)
    h.read("c1", 0, 5, 40, 6, topic=t, at_ms=2000)
    h.read("c0", 0, 6, 40, 8, topic=t, at_ms=old_read_ms)
    for off, s in ((5, 6), (6, 7), (7, 8)):
        h.drain(0, off, 40, s, topic=t, at_ms=90_000 + off)
    h.drain_end(complete=True)
    r = check(h)
    a = r["anomalies"]
    assert a["reused-offset"]["count"] == reused
    assert a["inconsistent-offset"]["count"] == inconsistent
    if inconsistent:
        assert a["inconsistent-offset"]["examples"][0]["offset"] == 6
    assert a["vanished"]["count"] == 1


def test_each_record_is_judged_by_its_own_producers_settings(check) -> None:  # type: ignore[no-untyped-def]
    """A test body's session with an acks=1, non-idempotent producer (the first, so its
    settings were run.json's producer_config) and an acks=all idempotent one: the old
    checker allowed every lost write and duplicate of the run by the first producer's
    settings (VALID). Now the run is judged by the strictest and only producer 1's own
    records are excused by its settings."""
    h = History()
    h.run["producer_config"] = {"acks": "1", "enable.idempotence": False}
    h.run["producer_configs"] = {"1": {"acks": "1", "enable.idempotence": False},
                                 "2": {"acks": "all", "enable.idempotence": True}}
    for producer, partition in ((1, 0), (2, 1)):
        h.write(producer, 0, partition=partition, offset=0)  # lost: never read
        h.write(producer, 1, partition=partition, offset=2)  # a duplicate at 1 and 2
        h.drain(partition, 1, producer, 1).drain(partition, 2, producer, 1)
    h.drain_end(complete=True)
    r = check(h)
    for kind in ("lost", "duplicate"):
        a = r["anomalies"][kind]
        assert (a["count"], a["excused"], a["allowed"]) == (2, 1, False), kind
        assert {(e["producer"], e["excused"]) for e in a["examples"]} == {(1, True), (2, False)}
        assert next(e for e in a["examples"] if e["producer"] == 1)["excuse"] == \
            "producer-settings"
    assert r["valid"] is False


def test_an_acks0_write_has_no_acknowledged_offset_to_mismatch(check) -> None:  # type: ignore[no-untyped-def]
    """An explore run (acks=0, kills) found 580 offset-mismatch records: librdkafka reported
    offsets 0, 1, 2, … for acks=0 writes after a leader change, where the broker sends no
    response at all. The old rule forbade it for every configuration; with acks=0 nothing
    was acknowledged, and an acks=0 producer beside an acks=all one is excused record by
    record, the acks=all one's mismatch still forbidden."""
    h = History()
    h.run["producer_config"] = {"acks": "0", "enable.idempotence": False}
    h.write(1, 0, offset=0)
    h.drain(0, 5, 1, 0)
    h.drain_end(complete=True)
    a = check(h)["anomalies"]["offset-mismatch"]
    assert (a["count"], a["allowed"]) == (1, True) and a["why"].startswith("allowed: acks=0")

    h = History()
    h.run["producer_config"] = {"acks": "0", "enable.idempotence": False}
    h.run["producer_configs"] = {"1": {"acks": "0", "enable.idempotence": False},
                                 "2": {"acks": "all", "enable.idempotence": True}}
    for producer, partition in ((1, 0), (2, 1)):
        h.write(producer, 0, partition=partition, offset=0)
        h.drain(partition, 3, producer, 0)
    h.drain_end(complete=True)
    r = check(h)
    a = r["anomalies"]["offset-mismatch"]
    assert (a["count"], a["excused"], a["allowed"]) == (2, 1, False)
    assert {(e["producer"], e["excused"]) for e in a["examples"]} == {(1, True), (2, False)}
    assert r["valid"] is False
