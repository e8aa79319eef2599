"""librdkafka#5541 on literal histories: a KIP-848 consumer whose poll loop a poll-stall fault
stopped past its max.poll.interval.ms, dead of a fatal INVALID_REQUEST on its next poll and
stuck after the heal. The name goes on that consumer only with its own evidence; every
look-alike below (another protocol, a fixed client, a short stall, another consumer's stall,
no fatal error or another one, a read after it) leaves the stuck consumer unnamed.

The old checker (before the poll-stall) named nothing here: the tagged case fails on it,
the look-alikes pass on it. Event kinds are spelled as strings so the file runs there too.

The shape is a measured affected run's (max-poll-stall on confluent-kafka 2.14.2,
max.poll.interval.ms 6 s): c0's loop stood 9.9 s from its last consume() to the stall's end,
_MAX_POLL_EXCEEDED and the fatal error came 0.2 s after it, and c0 read nothing in the
liveness phase (here 20-30 s) while the producers were acknowledged.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.checkers.test_liveness import HI, LO, _live_producers, _run
from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark

BUG = "librdkafka#5541"
# what confluent-kafka 2.14.2's consume() gave (code _FATAL, fatal() false), and the cause
# the consumer read from it
REASON = ("Fatal error: Broker: Invalid request: ConsumerGroupHeartbeat fatal error: "
          "Broker: Invalid request")


def _stalled_run(*, protocol: str | None = "consumer", run_version: str = "2.14.2",
                 event_version: str | None = "2.14.2", stall_ms: tuple[int, int] = (8_000, 17_800),
                 stalled_reader: str = "c0", fatal_ms: int | None = 18_000,
                 fatal: bool = True, cause: str = "INVALID_REQUEST", since: bool = True,
                 read_after_ms: int | None = None) -> History:
    """c0 (subscribe, group g) read offsets 0-2 early; c1 (assign) reads in the phase; a
    poll-stall on ``stalled_reader`` over ``stall_ms`` (its last consume() 100 ms before
    the start); c0's fatal consumer-error at ``fatal_ms`` (None: none)."""
    h = _live_producers(_run({"c0": "subscribe", "c1": "assign"}))
    conf: dict[str, Any] = {"group.id": "g", "max.poll.interval.ms": "6000"}
    if protocol:
        conf["group.protocol"] = protocol
    h.run["consumer_config"] = conf
    h.run["versions"] = {"librdkafka": run_version}
    # a KIP-848 session timeout that fits in the bound with its slack, so the silence is
    # judged (clusters kafka-chaos starts: 10 s against a 30 s bound; here 3 s against 10 s;
    # Kafka's default 45 s would make it unknown)
    h.run["broker_config"] = {"group.consumer.session.timeout.ms": "3000"}
    for o in range(3):
        h.read("c0", 0, o, 1, o, mode="subscribe", at_ms=1_000 + o)
    h.read("c1", 0, 0, 1, 0, mode="assign", at_ms=LO + 1_000)
    if read_after_ms is not None:
        h.read("c0", 0, 3, 1, 3, mode="subscribe", at_ms=read_after_ms)
    detail = {"stalled_since_ns": {stalled_reader: BASE_NS + (stall_ms[0] - 100) * MS}} \
        if since else {}
    h.event("poll-stall", "start", stall_ms[0], targets=[stalled_reader], target=stalled_reader,
            consumers=[stalled_reader], **detail)
    h.event("poll-stall", "end", stall_ms[1], targets=[stalled_reader], target=stalled_reader,
            consumers=[stalled_reader])
    if fatal_ms is not None:
        h.event("consumer-error", "instant", fatal_ms, client="c0", code=-150, name="_FATAL",
                fatal=fatal, reason=REASON, cause=cause,
                **({"librdkafka": event_version} if event_version else {}))
    return h


def _stuck(res: dict[str, Any]) -> dict[str, Any]:
    stuck = res["anomalies"]["stuck-consumer"]
    assert stuck["count"] == 1, stuck
    assert stuck["examples"][0]["client"] == "group g"
    return stuck


def test_a_kip848_consumer_dead_after_a_stall_past_its_interval_names_5541(check) -> None:  # type: ignore[no-untyped-def]
    res = check(_stalled_run())
    stuck = _stuck(res)
    assert stuck["known_bugs"] == {BUG: 1}  # the old checker: {}
    assert stuck["examples"][0]["known_bug"]["id"] == BUG
    assert res["valid"] is False  # a name alone changes nothing
    h = _stalled_run()
    h.run["accept_known"] = [BUG]
    res = check(h)
    assert res["anomalies"]["stuck-consumer"]["accepted"] == 1 and res["valid"] is True


@pytest.mark.parametrize("case", [
    {"protocol": None},  # the classic protocol: no KIP-848 member
    {"run_version": "2.15.0", "event_version": "2.15.0"},  # the fixed client
    {"event_version": "2.15.0"},  # this consumer's own client is the fixed one
    {"run_version": "2.11.1", "event_version": "2.11.1"},  # before the bug
    {"stall_ms": (8_000, 13_000)},  # 5.1 s without polling: under the 6 s interval
    {"since": False},  # the stall's start did not record when c0 last polled
    {"stalled_reader": "c1"},  # another consumer's stall
    {"fatal_ms": None},  # no fatal error recorded
    {"fatal": False},  # an error, not a fatal one
    {"cause": "GROUP_AUTHORIZATION_FAILED"},  # another fatal error
    {"fatal_ms": 7_000},  # the fatal error came before the stall
    {"read_after_ms": 19_000},  # c0 read after it: not dead of it
])
def test_a_stuck_consumer_without_the_evidence_names_no_bug(check, case) -> None:  # type: ignore[no-untyped-def]
    res = check(_stalled_run(**case))
    assert _stuck(res)["known_bugs"] == {}, case
    assert res["valid"] is False


def test_the_window_bounds_are_the_history_s(check) -> None:  # type: ignore[no-untyped-def]
    # a fatal error after the liveness window's end is not evidence of being stuck in it
    res = check(_stalled_run(fatal_ms=HI + 500))
    assert _stuck(res)["known_bugs"] == {}
