"""A consumer that resumes past a truncation: librdkafka#5158 in the checker.

The partition held p0's records 0-5 at offsets 0-5; a truncation cut it back to offset 2 and
p1's records 0-5 took offsets 2-7. A restart-mode consumer that read offsets 0-5 before the
truncation and restarts after it must resume at the truncation point (KIP-320: the Java
client validates its committed offset against its leader epoch); resuming at its committed
offset 6 it never reads p1's records 0-3, though no offset lies between its two reads: a
poll-skip, named librdkafka#5158 only for a librdkafka restart-mode reader whose step
crossed its restart.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History

STALE = "librdkafka#5158"


def _history(reads: list[tuple[int, int, int, int]], restart_at: int | None = 5,
             mode: str = "restart", client: str = "confluent-kafka") -> History:
    """``reads``: (poll, offset, producer, seq) of c0; the log as the drain read it."""
    h = History()
    h.run["versions"] = {"client": client,
                         "librdkafka": "2.16.0" if client == "confluent-kafka" else None}
    h.run["workload"] = {"consumers": [{"id": "c0", "mode": mode}]}
    for s in range(6):
        h.write(0, s, offset=s)
    for s in range(6):
        h.write(1, s, offset=2 + s, at_ms=100 + s)
    for off, (p, s) in enumerate([(0, 0), (0, 1), *((1, i) for i in range(6))]):
        h.drain(0, off, p, s)
    for poll, off, p, s in reads:
        h.read("c0", 0, off, p, s, poll=poll, mode=mode)
    if restart_at is not None:
        h.event("rebalance", at_ms=1001, reader="c0", what="restart", poll=restart_at,
                partitions=["t:0"])
    h.drain_end()
    return h


#: c0 read the old log's offsets 0-5, restarted, resumed at 6 in the new log.
OLD = [(i, i, 0, i) for i in range(6)]
PAST = [*OLD, (6, 6, 1, 4), (7, 7, 1, 5)]


def _skip(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = r["anomalies"]["poll-skip"]
    return out


@pytest.mark.spark
def test_a_restart_past_the_truncation_point_is_a_skip_named_5158(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_history(PAST))
    skip = _skip(r)
    assert skip["count"] == 1 and not skip["allowed"]
    ex = skip["examples"][0]
    assert (ex["reader"], ex["prev_offset"], ex["offset"]) == ("c0", 5, 6)
    assert ex["known_bug"]["id"] == STALE
    assert skip["known_bugs"] == {STALE: 1}
    assert r["valid"] is False


@pytest.mark.spark
def test_the_java_client_s_same_skip_is_counted_and_named_nothing(check) -> None:  # type: ignore[no-untyped-def]
    skip = _skip(check(_history(PAST, client="java")))
    assert skip["count"] == 1 and skip["known_bugs"] == {}


@pytest.mark.spark
def test_a_running_reader_that_goes_on_past_a_truncation_skips_but_is_no_restart(check) -> None:  # type: ignore[no-untyped-def]
    # an assign-mode reader that never restarted (sarama has no KIP-320): a skip, not #5158
    skip = _skip(check(_history(PAST, restart_at=None, mode="assign")))
    assert skip["count"] == 1 and skip["known_bugs"] == {}


@pytest.mark.spark
def test_look_alikes_name_nothing(check) -> None:  # type: ignore[no-untyped-def]
    # resumed at the truncation point, as a validating client does: a step back onto a
    # reused offset across the restart, excused
    back = check(_history([*OLD, (6, 2, 1, 0), (7, 3, 1, 1)]))["anomalies"]
    assert back["poll-skip"]["count"] == 0
    assert back["nonmonotonic-poll"]["count"] == back["nonmonotonic-poll"]["excused"] == 1
    # committed below the truncation point (read offsets 0-1, which the truncation kept):
    # it resumes at offset 2 and reads the new records
    below = [(0, 0, 0, 0), (1, 1, 0, 1), (6, 2, 1, 0), (7, 3, 1, 1)]
    assert _skip(check(_history(below, restart_at=1)))["count"] == 0
    # no truncation: the reader's records are the log's, a restart resumes where it was
    h = History()
    h.run["workload"] = {"consumers": [{"id": "c0", "mode": "restart"}]}
    for s in range(6):
        h.write(0, s, offset=s)
        h.drain(0, s, 0, s)
    for s in range(6):
        h.read("c0", 0, s, 0, s, poll=s, mode="restart")
    h.event("rebalance", at_ms=1001, reader="c0", what="restart", poll=3, partitions=["t:0"])
    h.drain_end()
    assert _skip(check(h))["count"] == 0
