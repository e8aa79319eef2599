"""A consumer that reads offsets again after a leader epoch change: librdkafka#4261 in the
checker.

The partition holds p0's records 0-9 at offsets 0-9. c0 read offsets 0-3 (polls 0-3, at
1.000-1.003 s), then, its loop stopped, the partition's leader moved (the observer shows
leader 1 half a second before the rise and leader 2 from it, at 5 s by default) while its
client held offsets 4-7 fetched but unread: it read 4-7 (polls 5-8, from 6 s) and, fetching
again from the application's position 4, read 4-9 (polls 9-14). The step from 7 back to 4
is a nonmonotonic-poll, named librdkafka#4261 only on librdkafka 2.1.0, with no rebalance
between, and only when the rise lies in the span c0's position was 4: after its read of 3
(1.003 s) and before its next read of 4 (6 s), the rise placed between the observer's
sample before it and the one that showed it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History

REREAD = "librdkafka#4261"

Reads = list[tuple[int, int, int]]


def _reads(again_ms: int = 6100) -> Reads:
    """(poll, offset, at_ms) of c0's reads: 0-3, (the epoch rise at 5 s), 4-7 from 6 s,
    then 4-9 again from ``again_ms``."""
    return [*((i, i, 1000 + i) for i in range(4)),
            *((5 + i, 4 + i, 6000 + i) for i in range(4)),
            *((9 + i, 4 + i, again_ms + i) for i in range(6))]


def _history(librdkafka: str = "2.1.0", rise_ms: int | None = 5000,
             rebalance_at: int | None = None, mode: str = "subscribe",
             samples: list[tuple[int, int, int | None]] | None = None,
             again_ms: int = 6100, reads: Reads | None = None,
             assigned_ms: int | None = None, rise_partition: int = 0) -> History:
    """``samples``: (at_ms, leader, epoch) the observer took of ``rise_partition`` instead
    of the default ones (leader 1 at epoch 0 500 ms before ``rise_ms``, then leader 2 at
    epoch 1 from it); ``reads``: c0's instead of :func:`_reads`; ``assigned_ms``: c0's
    assignment of the partition recorded then, at poll 0."""
    h = History()
    h.run["versions"] = {"client": "confluent-kafka", "librdkafka": librdkafka}
    c0: dict[str, Any] = {"id": "c0", "mode": mode}
    h.run["workload"] = {"consumers": [c0]}
    for s in range(10):
        h.write(0, s, offset=s)
        h.drain(0, s, 0, s)
    if assigned_ms is not None:
        h.event("rebalance", at_ms=assigned_ms, reader="c0", what="assigned", poll=0,
                partitions=["t:0"])
    for poll, off, at in reads if reads is not None else _reads(again_ms):
        h.read("c0", 0, off, 0, off, poll=poll, mode=mode, at_ms=at)
    if samples is None:
        samples = [((5000 if rise_ms is None else rise_ms) - 500, 1, 0)]
        samples += [(rise_ms, 2, 1)] if rise_ms is not None else []
    for at, leader, epoch in samples:
        h.observe(at, rise_partition, leader, [1, 2, 3], epoch=epoch)
    if rise_partition != 0:  # partition 0 led by broker 1 throughout
        h.observe(0, 0, 1, [1, 2, 3], epoch=0).observe(9000, 0, 1, [1, 2, 3], epoch=0)
    if rebalance_at is not None:
        h.event("rebalance", at_ms=6050, reader="c0", what="assigned", poll=rebalance_at,
                partitions=["t:0"])
    h.drain_end()
    return h


def _back(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = r["anomalies"]["nonmonotonic-poll"]
    return out


@pytest.mark.spark
def test_a_reread_after_an_epoch_rise_is_named_4261_on_2_1_0(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_history())
    back = _back(r)
    assert back["count"] == 1 and not back["allowed"]
    ex = back["examples"][0]
    assert (ex["reader"], ex["prev_offset"], ex["offset"]) == ("c0", 7, 4)
    assert ex["known_bug"]["id"] == REREAD
    assert back["known_bugs"] == {REREAD: 1}
    assert r["valid"] is False


@pytest.mark.spark
def test_the_rise_may_lie_anywhere_the_samples_leave_it(check) -> None:  # type: ignore[no-untyped-def]
    # shown at 6.3 s, after c0's read of 4 (6 s): the sample before (5.9 s) still showed
    # the old leader, so the rise may have come before the read of 4: named
    late = [(5900, 1, 0), (6300, 2, 1)]
    assert _back(check(_history(samples=late)))["known_bugs"] == {REREAD: 1}
    # the sample before it at 6.1 s showed the old leader: the rise came after c0 had read
    # 4 (its position 8 by then), not this validation
    after = [(6100, 1, 0), (6300, 2, 1)]
    assert _back(check(_history(samples=after)))["known_bugs"] == {}


@pytest.mark.spark
def test_a_batch_holding_the_queue_and_the_refetch_is_one_step_back(check) -> None:  # type: ignore[no-untyped-def]
    # one consume() returned the queued 4-7 and then the refetched 4-9: in the order the
    # client returned them (poll_index) that is one step back, 7 to 4, named
    reads = [*((i, i, 1000 + i) for i in range(4)),
             *((5, o, 6000) for o in [4, 5, 6, 7, 4, 5, 6, 7, 8, 9])]
    r = check(_history(reads=reads))
    back = _back(r)
    assert back["count"] == 1 and back["known_bugs"] == {REREAD: 1}
    ex = back["examples"][0]
    assert (ex["prev_offset"], ex["offset"], ex["poll"]) == (7, 4, 5)
    assert r["anomalies"]["poll-skip"]["count"] == 0
    # the same poll in a history that did not record each read's place in its poll: taken
    # in offset order, the re-read is 4 steps onto offsets read twice (4, 5, 6, 7); the
    # first, onto 4, is named (c0's position was 4 from its read of 3), the others' spans
    # (from the poll's read of the offset before to its own) are one instant
    h = _history(reads=reads)
    for x in h.reads:
        x["poll_index"] = None
    back = _back(check(h))
    assert back["count"] == 4 and back["known_bugs"] == {REREAD: 1}


@pytest.mark.spark
def test_a_reader_that_read_nothing_before_the_offset_counts_from_its_assignment(check) -> None:  # type: ignore[no-untyped-def]
    # c0 was assigned the partition at 0.5 s (its committed offset 4), read 4-7 from 6 s
    # and 4-9 again: its position was 4 from its assignment to its first read of 4
    reads = [*((1 + i, 4 + i, 6000 + i) for i in range(4)),
             *((5 + i, 4 + i, 6100 + i) for i in range(6))]
    assert _back(check(_history(reads=reads, assigned_ms=500)))["known_bugs"] == {REREAD: 1}
    # the rise before its assignment (shown at 0.2 s): its client started on the new epoch
    assert _back(check(_history(reads=reads, assigned_ms=500,
                                rise_ms=200)))["known_bugs"] == {}
    # no assignment recorded (the start of its position unknown): nothing named
    assert _back(check(_history(reads=reads)))["known_bugs"] == {}


@pytest.mark.spark
def test_a_new_leader_sampled_before_its_epoch_is_the_rise(check) -> None:  # type: ignore[no-untyped-def]
    # the observer's first samples of a new leader may lack its epoch (seen in a run):
    # the new leader is the rise, and a later sample of the same epoch is no second one
    samples = [(4000, 1, 0), (5000, 2, None), (5300, 2, 1), (5600, 2, None)]
    assert _back(check(_history(samples=samples)))["known_bugs"] == {REREAD: 1}
    # an epoch sampled again after a gap, the leader unchanged: no rise, nothing named
    same = [(4000, 1, 0), (5000, 1, None), (5300, 1, 0)]
    assert _back(check(_history(samples=same)))["known_bugs"] == {}


@pytest.mark.spark
def test_look_alikes_name_nothing(check) -> None:  # type: ignore[no-untyped-def]
    # the fixed release: the same step back is counted and named nothing
    assert _back(check(_history(librdkafka="2.1.1")))["known_bugs"] == {}
    # the epoch rose 5 s before the step back, but before c0 read 3 (shown at 0.8 s, c0
    # read 3 at 1.003 s): its position was never 4 while it rose
    assert _back(check(_history(rise_ms=800)))["known_bugs"] == {}
    # the epoch rose after c0 had first read 4-7 (at 6 s; the rise at 8.5 s, the read that
    # went back at 9 s): its position was 8 by then, never 4 — not this validation, though
    # the step back follows the rise closely
    assert _back(check(_history(rise_ms=8500, again_ms=9000)))["known_bugs"] == {}
    # another partition's leader moved in the span: partition 0's epoch never rose
    assert _back(check(_history(rise_partition=1)))["known_bugs"] == {}
    # a rebalance between the two reads: excused, not within one session, not named
    back = _back(check(_history(rebalance_at=9)))
    assert back["excused"] == 1 and back["known_bugs"] == {}


@pytest.mark.spark
def test_one_span_names_one_step_back(check) -> None:  # type: ignore[no-untyped-def]
    # after the re-read (4-9 from 6.1 s) c0 went back to 4 once more at 20 s, no rise
    # since: its position was 10 then, and the one span its position was 4 (1.003-6 s)
    # explains the first step back only
    reads = [*_reads(), *((15 + i, 4 + i, 20_000 + i) for i in range(6))]
    back = _back(check(_history(reads=reads)))
    assert back["count"] == 2 and back["known_bugs"] == {REREAD: 1}
    named = [e for e in back["examples"] if e.get("known_bug")]
    assert [e["poll"] for e in named] == [9]


@pytest.mark.spark
def test_a_reread_going_on_into_the_next_poll_is_one_step_back(check) -> None:  # type: ignore[no-untyped-def]
    # poll 5 returned the queued 4-7 and the refetched 4-5, poll 6 went on with 6-9: one
    # step back (7 to 4 inside poll 5), named; poll 6 steps forward from 5
    reads = [*((i, i, 1000 + i) for i in range(4)),
             *((5, o, 6000) for o in [4, 5, 6, 7, 4, 5]),
             *((6, o, 6100) for o in [6, 7, 8, 9])]
    r = check(_history(reads=reads))
    back = _back(r)
    assert back["count"] == 1 and back["known_bugs"] == {REREAD: 1}
    assert r["anomalies"]["poll-skip"]["count"] == 0


@pytest.mark.spark
def test_a_refetch_below_the_queue_is_no_skip(check) -> None:  # type: ignore[no-untyped-def]
    # c0 read 0-1, then (the rise at 5 s) 2-5 from 6 s, polls 3-4 holding 2-3 and 4-5;
    # poll 5 returned the queued 6-7 and then the refetched 2-3, poll 6 went on with 4-9.
    # In the client's order: one step back, 7 to 2 (c0's position at the rise), named, and
    # no skip. In offset order poll 5 was 2, 3, 6, 7: a jump over 4-5 (a poll-skip named
    # nothing) and poll 6 a second step back
    reads = [(0, 0, 1000), (1, 1, 1001), (3, 2, 6000), (3, 3, 6000), (4, 4, 6001),
             (4, 5, 6001), *((5, o, 6100) for o in [6, 7, 2, 3]),
             *((6, o, 6200) for o in [4, 5, 6, 7, 8, 9])]
    r = check(_history(reads=reads))
    back = _back(r)
    assert back["count"] == 1 and back["known_bugs"] == {REREAD: 1}
    assert back["examples"][0]["offset"] == 2
    assert r["anomalies"]["poll-skip"]["count"] == 0
