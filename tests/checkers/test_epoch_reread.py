"""A consumer that reads offsets again after a leader epoch change: librdkafka#4261 in the
checker.

The partition holds p0's records 0-9 at offsets 0-9. c0 read offsets 0-3 (polls 0-3), then
its client learned a new leader epoch (the observer shows it at 5 s) while it held offsets
4-7 fetched but unread: it read 4-7 (polls 5-8) and, fetching again from the application's
position 4, read 4-9 (polls 9-14). The step from 7 back to 4 is a nonmonotonic-poll, named
librdkafka#4261 only on librdkafka 2.1.0, with no rebalance between, and an epoch rise its
client may have learned of while its position was 4: after its first read of 3 (less the
client's metadata refresh interval), before its first read of 4 (plus the observer's lag).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History

REREAD = "librdkafka#4261"


def _reads(again_ms: int = 6100) -> list[tuple[int, int, int]]:
    """(poll, offset, at_ms) of c0's reads: 0-3, (the epoch rise at 5 s), 4-7 from 6 s,
    then 4-9 again from ``again_ms``."""
    return [*((i, i, 1000 + i) for i in range(4)),
            *((5 + i, 4 + i, 6000 + i) for i in range(4)),
            *((9 + i, 4 + i, again_ms + i) for i in range(6))]


def _history(librdkafka: str = "2.1.0", rise_ms: int | None = 5000,
             rebalance_at: int | None = None, mode: str = "subscribe",
             samples: list[tuple[int, int, int | None]] | None = None,
             again_ms: int = 6100, refresh_ms: int | None = None) -> History:
    """``samples``: (at_ms, leader, epoch) the observer took instead of the default ones
    (leader 1 at epoch 0, then leader 2 at epoch 1 from ``rise_ms``); ``refresh_ms``: c0's
    topic.metadata.refresh.interval.ms (librdkafka's 300 s when None)."""
    h = History()
    h.run["versions"] = {"client": "confluent-kafka", "librdkafka": librdkafka}
    c0: dict[str, Any] = {"id": "c0", "mode": mode}
    if refresh_ms is not None:
        c0["consumer_config"] = {"topic.metadata.refresh.interval.ms": str(refresh_ms)}
    h.run["workload"] = {"consumers": [c0]}
    for s in range(10):
        h.write(0, s, offset=s)
        h.drain(0, s, 0, s)
    for poll, off, at in _reads(again_ms):
        h.read("c0", 0, off, 0, off, poll=poll, mode=mode, at_ms=at)
    if samples is None:
        samples = [((5000 if rise_ms is None else rise_ms) - 500, 1, 0)]
        samples += [(rise_ms, 2, 1)] if rise_ms is not None else []
    for at, leader, epoch in samples:
        h.observe(at, 0, leader, [1, 2, 3], epoch=epoch)
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
    # the epoch rose long before the step back, none since: the client learned of it by its
    # next metadata refresh at the latest, before it had read 3 (c0 went back to 4): with
    # the default 300 s interval a rise 400 s before, with c0's 30 s a rise 60 s before
    assert _back(check(_history(rise_ms=-400_000)))["known_bugs"] == {}
    assert _back(check(_history(rise_ms=-60_000, refresh_ms=30_000)))["known_bugs"] == {}
    # the epoch rose after c0 had first read 4-7 (at 6 s; the rise at 8.5 s, the read that
    # went back at 9 s): its position was 8 by then, never 4 — not this validation, though
    # the step back follows the rise closely
    assert _back(check(_history(rise_ms=8500, again_ms=9000)))["known_bugs"] == {}
    # a rebalance between the two reads: excused, not within one session, not named
    back = _back(check(_history(rebalance_at=9)))
    assert back["excused"] == 1 and back["known_bugs"] == {}
