"""The restart consumer mode in the checker: a reader alone in its group resumes at the
offset it committed, so a step back across its recorded restart is excused (at least once),
a skip never is — librdkafka#4844's committed position + 2 is exactly such a skip."""

from __future__ import annotations

import pytest

from tests.support.literal import History


def _history(librdkafka: str) -> History:
    h = History()
    h.run["versions"] = {"librdkafka": librdkafka}
    h.config("consumer_config", enable_partition_eof="true")
    for s in range(6):
        h.write(0, s, offset=s)
        h.drain(0, s, 0, s)
    # polls 0-2 read offsets 0-2, the restart is recorded at poll 2, the new consumer resumes
    # at offset 4 (3 skipped: position + 2), then a second restart re-reads offset 4.
    for poll, off in ((0, 0), (1, 1), (2, 2), (3, 4), (4, 5), (5, 4), (6, 5)):
        h.read("c0", 0, off, 0, off, poll=poll, mode="restart")
    h.event("rebalance", at_ms=1001, reader="c0", what="restart", poll=2, partitions=["t:0"])
    h.event("rebalance", at_ms=1002, reader="c0", what="restart", poll=4, partitions=["t:0"])
    h.drain_end()
    return h


@pytest.mark.spark
def test_skip_across_a_restart_is_flagged_and_a_reread_is_excused(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_history("2.13.0"))
    a = r["anomalies"]
    skip = a["poll-skip"]
    assert skip["count"] == 1 and skip.get("excused", 0) == 0 and not skip["allowed"]
    ex = skip["examples"][0]
    assert (ex["reader"], ex["prev_offset"], ex["offset"]) == ("c0", 2, 4)
    assert ex["known_bug"]["id"] == "librdkafka#4844"
    back = a["nonmonotonic-poll"]
    assert back["count"] == 1 and back["excused"] == 1
    assert r["valid"] is False


@pytest.mark.spark
def test_the_fixed_client_names_no_bug(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_history("2.13.2"))
    skip = r["anomalies"]["poll-skip"]
    assert skip["count"] == 1 and skip["known_bugs"] == {}
    assert "known_bug" not in skip["examples"][0]


def test_consumer_restart_mechanism_counts_recorded_restarts() -> None:
    from checkers.observations import PartitionHistory
    from checkers.verdict import mechanism
    from contract.events import INSTANT, Event

    def restart(poll: int) -> Event:
        return Event(poll, "rebalance", INSTANT, (), {"reader": "c0", "what": "restart",
                                                      "poll": poll, "partitions": ["t:0"]})

    other = Event(0, "rebalance", INSTANT, (), {"reader": "c0", "what": "revoked", "poll": 1})
    want = [{"kind": "consumer-restart", "count": 2}]
    parts = PartitionHistory([])
    assert mechanism(want, [restart(3), other, restart(9)], parts)["observed"] is True
    one = mechanism(want, [restart(3), other], parts)
    assert one["observed"] is False and "fewer than 2" in one["details"][0]["evidence"]
