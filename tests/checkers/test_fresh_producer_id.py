"""Known answers for confluent-kafka-go#921 (contract/known_bugs.py FRESH_ID_IMPLICIT_ACK):
a new client's first records in a partition, acknowledged without an offset below its first
offset-bearing acknowledgement there and never read, are named; nothing else is."""

from __future__ import annotations

from typing import Any

import pytest

from contract.known_bugs import FRESH_ID_IMPLICIT_ACK
from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark


def _first_id(h: History, producer: int, pid: int, first_seq: int, at_ms: int) -> None:
    """A client's first producer-epoch event (workloads/epoch_watch.py)."""
    h.event("producer-epoch", at_ms=at_ms, targets=[producer], producer=producer,
            producer_id=pid, epoch=0, epoch_cnt=1, bump=False, since_ns=None,
            first_seq=first_seq)


def _bump(h: History, producer: int, pid: int, at_ms: int) -> None:
    h.event("producer-epoch", at_ms=at_ms, targets=[producer], producer=producer,
            producer_id=pid, epoch=1, epoch_cnt=2, bump=True,
            since_ns=BASE_NS + (at_ms - 1) * MS, prev_producer_id=pid, prev_epoch=0)


def _traps(accept: list[str], only_heads: bool = False) -> History:
    """Producer 1's first client (seqs 0-5) and, after a recreation, its second (seqs 6-);
    producer 2 has no client start in the history."""
    h = History()
    h.run["accept_known"] = accept
    nxt = {0: 0, 1: 0, 2: 0, 3: 0}  # the drain's next offset per partition
    # the leaders the heads' batches failed across: p1's at 1 ms, p0's at 85 ms
    for p in range(4):
        h.observe(0, p, 1, [1, 2, 3], epoch=0)
    h.observe(1, 1, 2, [1, 2, 3], epoch=1).observe(85, 0, 2, [1, 2, 3], epoch=1)

    def stored(producer: int, seq: int, partition: int) -> None:
        off = nxt[partition]
        nxt[partition] += 1
        h.write(producer, seq, partition=partition, offset=off, at_ms=10 * seq)
        h.drain(partition, off, producer, seq)

    _first_id(h, 1, 1000, 0, at_ms=1)
    h.write(1, 0, partition=1, at_ms=0)  # the first client's head in p1: no offset, lost
    stored(1, 1, 1)
    for s in range(2, 6):
        stored(1, s, 0)
    _first_id(h, 1, 2000, 6, at_ms=61)
    # the second client in p0: seqs 6 and 8 acknowledged without an offset, then seq 10
    # with one: the first two are its head there (lost, named)
    h.write(1, 6, partition=0, at_ms=60).write(1, 8, partition=0, at_ms=80)
    stored(1, 10, 0)
    stored(1, 7, 1)
    if not only_heads:
        h.write(1, 12, partition=0, at_ms=120)  # offset-less above the client's first: not
        h.write(1, 9, partition=2, at_ms=90)  # no offset-bearing ack in p2 after it: not
        h.write(1, 11, partition=1, offset=5, at_ms=110)  # acked with an offset: not
        # producer 2: no client start in the history: never matched
        h.write(2, 0, partition=2, at_ms=5)
        stored(2, 1, 2)
        _bump(h, 2, 3000, at_ms=3)  # a bump names no first seq
        # the second client's head in p3, where no leader moved while it was in flight: an
        # offset-less acknowledgement alone is no evidence (librdkafka acks without an
        # offset on DUPLICATE_SEQUENCE_NUMBER too; the old checker named it)
        h.write(1, 13, partition=3, at_ms=130)
        stored(1, 14, 3)
    h.drain_end(complete=True)
    return h


@pytest.fixture(scope="module")
def traps(spark, tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from checkers import check_run

    results = check_run(_traps([FRESH_ID_IMPLICIT_ACK]).save(
        tmp_path_factory.mktemp("fresh") / "run"))
    assert "error" not in results, results.get("traceback")
    return results


def test_only_fresh_heads_are_named(traps) -> None:  # type: ignore[no-untyped-def]
    lost = traps["anomalies"]["lost"]
    assert lost["count"] == 8, lost
    assert lost["known_bugs"] == {FRESH_ID_IMPLICIT_ACK: 3}, lost
    named = {(e["producer"], e["seq"]) for e in lost["examples"] if e.get("known_bug")}
    assert named == {(1, 0), (1, 6), (1, 8)}, lost["examples"]
    assert all(e["known_bug"]["id"] == FRESH_ID_IMPLICIT_ACK and e["known_bug"]["accepted"]
               for e in lost["examples"] if e.get("known_bug"))
    # five lost records no known bug explains keep the kind forbidden, though accepted
    assert lost["allowed"] is False and lost["accepted"] == 3 and "5 of 8 neither" in lost["why"]
    assert traps["valid"] is False
    assert traps["known_bugs"][FRESH_ID_IMPLICIT_ACK]["status"] == "open"


def test_accepted_fresh_heads_leave_the_verdict_valid(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_traps([FRESH_ID_IMPLICIT_ACK], only_heads=True))
    lost = r["anomalies"]["lost"]
    assert lost["count"] == 3 and lost["known_bugs"] == {FRESH_ID_IMPLICIT_ACK: 3}, lost
    assert lost["allowed"] is True and lost["accepted"] == 3, lost
    assert r["valid"] is True


def test_unaccepted_fresh_heads_are_a_violation(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_traps([], only_heads=True))
    lost = r["anomalies"]["lost"]
    assert lost["known_bugs"] == {FRESH_ID_IMPLICIT_ACK: 3} and lost["allowed"] is False, lost
    assert r["valid"] is False


def _cut(lost_detail: bool = True, recovered_by: int = 1) -> History:
    """Producer 2 (no client start in the history: only a cut can name its records). A power
    loss at 100 ms cuts p0's log on node 1; p1 is not cut. p0 is offline, then led by
    ``recovered_by`` from 212 ms (while seqs 4 and 5 are in flight)."""
    h = History()
    h.run["accept_known"] = [FRESH_ID_IMPLICIT_ACK]
    h.observe(0, 0, 1, [1, 2, 3], epoch=0).observe(0, 1, 1, [1, 2, 3], epoch=0)
    h.observe(110, 0, -1, [1], epoch=0).observe(212, 0, recovered_by, [recovered_by], epoch=1)
    for s in range(3):  # p1, before the cut
        h.write(2, s, partition=1, offset=s, at_ms=10 * (s + 1)).drain(1, s, 2, s)
    h.write(2, 3, partition=0, at_ms=50)  # offset-less before the cut: not named
    cut = {"1": {"t-0": {"recovery_point": 0, "removed_batches": 3, "removed_bytes": 300}}}
    h.event("power-loss", "start", at_ms=100, targets=[1], target="1",
            **({"lost": cut} if lost_detail else {}))
    h.event("power-loss", "end", at_ms=150, targets=[1], target="1")
    # after the cut, p0's leader has no state for producer 2: seqs 4 and 5 acknowledged
    # without an offset below its first offset-bearing acknowledgement there since (seq 6)
    h.write(2, 4, partition=0, at_ms=200).write(2, 5, partition=0, at_ms=210)
    h.write(2, 6, partition=0, offset=0, at_ms=220).drain(0, 0, 2, 6)
    h.write(2, 7, partition=0, at_ms=230)  # above seq 6: not named
    h.write(2, 8, partition=1, at_ms=240)  # p1 was not cut: not named
    h.write(2, 9, partition=1, offset=3, at_ms=250).drain(1, 3, 2, 9)
    h.drain_end(complete=True)
    return h


def test_the_head_after_a_power_loss_cut_the_log_is_named(check) -> None:  # type: ignore[no-untyped-def]
    # A leader whose log a power loss cut has no state for any producer id, so the race of
    # confluent-kafka-go#921 loses records of a client that is not new (seen on Kafka 3.9.1
    # in last-replica-standing: three records acknowledged without offsets after the restart)
    r = check(_cut())
    lost = r["anomalies"]["lost"]
    assert lost["count"] == 5, lost
    named = {(e["producer"], e["seq"]) for e in lost["examples"] if e.get("known_bug")}
    assert named == {(2, 4), (2, 5)} and lost["known_bugs"] == {FRESH_ID_IMPLICIT_ACK: 2}, lost
    # a history whose power-loss event does not say what it cut (older runs) names none; nor
    # do more cuts than one expression should hold
    from checkers.fresh_ids import MAX_CUTS, state_cuts
    from contract.events import Event

    many = {"1": {f"t-{p}": {"removed_batches": 1} for p in range(MAX_CUTS + 1)}}
    assert state_cuts([Event(1, "power-loss", "start", (), {"lost": many})]) == {}
    assert len(state_cuts([Event(1, "power-loss", "start", (), {"lost": {
        "1": dict(list(many["1"].items())[:MAX_CUTS])}})])) == MAX_CUTS
    lost = check(_cut(lost_detail=False))["anomalies"]["lost"]
    assert lost["count"] == 5 and not lost.get("known_bugs"), lost


def test_a_cut_of_a_replica_that_did_not_lead_at_recovery_names_nothing(check) -> None:  # type: ignore[no-untyped-def]
    """Node 2, whose log was not cut, leads p0 after the crash: it kept producer 2's state,
    so the race cannot start there (the old checker named seqs 4 and 5)."""
    lost = check(_cut(recovered_by=2))["anomalies"]["lost"]
    assert lost["count"] == 5 and lost["known_bugs"] == {}, lost
