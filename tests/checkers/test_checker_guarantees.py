"""Known answers for the guarantee model of issue 11: duplicates and reorders under
idempotence, known client bugs, poll skips across rebalances, reused offsets.

Each trap lives in its own topic with its own producer, so one Spark check answers many
small tests (the machine has 2 cores).
"""

from __future__ import annotations

from typing import Any

import pytest
from checker_histories import History

pytestmark = pytest.mark.spark

TIMEOUT = "_MSG_TIMED_OUT"


def _idempotence() -> History:
    h = History()  # acks=all, min ISR 2, enable.idempotence=true
    # producer 1: a duplicate whose later copy was first read after producer 1's own write
    # ended with _MSG_TIMED_OUT (an epoch bump): tagged librdkafka#4953, still forbidden
    t = "dupbump"
    h.write(1, 0, offset=0, at_ms=0, topic=t)
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
    # producer 5: seq 0 stored after seq 2, with an epoch bump (seq 1 timed out) in between
    t = "reorderbump"
    h.write(5, 0, offset=1, at_ms=0, topic=t)
    h.write(5, 1, outcome="info", error="OUT_OF_ORDER_SEQUENCE_NUMBER", at_ms=3, topic=t)
    h.write(5, 2, offset=0, at_ms=6, topic=t)
    h.drain(0, 0, 5, 2, topic=t).drain(0, 1, 5, 0, topic=t)
    h.drain_end(complete=True)
    return h


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
    assert dup["count"] == 3 and dup["allowed"] is False
    assert dup["why"].startswith("forbidden: enable.idempotence=true")
    assert idem["valid"] is False
    assert idem["stats"]["errors"][TIMEOUT] == 3


def test_duplicate_after_epoch_bump_names_the_known_bug(idem) -> None:  # type: ignore[no-untyped-def]
    ex = _by_topic(idem, "duplicate")
    bumped = ex["dupbump"]
    assert bumped["known_bug"]["id"] == "librdkafka#4953"
    assert bumped["known_bug"]["status"] == "open"
    assert bumped["epoch_bump_ns"] == bumped["complete_ns"] + 5_000_000  # seq 1 ended at 7 ms
    assert "epoch bump of producer 1" in bumped["summary"]
    # no bump of that producer, or the bump came after the later copy was read: untagged
    for topic in ("dupnobump", "duplate"):
        assert "known_bug" not in ex[topic] and "epoch_bump_ns" not in ex[topic], topic


def test_reorder_under_idempotence_forbidden_and_tagged(idem) -> None:  # type: ignore[no-untyped-def]
    ro = idem["anomalies"]["reorder"]
    assert ro["count"] == 1 and ro["allowed"] is False
    (e,) = ro["examples"]
    assert (e["producer"], e["seq"], e["read_offset"], e["other"]["seq"]) == (5, 0, 1, 2)
    assert e["known_bug"]["id"] == "librdkafka#4953"


def test_known_bug_counts_are_exact(idem) -> None:  # type: ignore[no-untyped-def]
    assert idem["anomalies"]["duplicate"]["known_bugs"] == {"librdkafka#4953": 1}
    assert idem["anomalies"]["reorder"]["known_bugs"] == {"librdkafka#4953": 1}
    assert idem["anomalies"]["lost"]["known_bugs"] == {}
    assert idem["accepted_known"] == []


def _many_bumped_duplicates(n: int, accept: list[str], stray: bool) -> History:
    """``n`` duplicates of producer 1, all after its epoch bump; ``stray``: one more duplicate
    of producer 2, which never had an epoch-bump error."""
    h = History()
    h.run["accept_known"] = accept
    for s in range(n):
        h.write(1, s, offset=2 * s, at_ms=s)
    h.write(1, n, outcome="info", error=TIMEOUT, at_ms=n + 5)
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
