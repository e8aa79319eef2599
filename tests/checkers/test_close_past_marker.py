"""A consumer whose close committed past records it never returned: librdkafka#3400.

p0 wrote three committed transactions: A at offsets 0-4 (its marker at 5), B at 6-10 (marker
11), C at 12-14 (marker 15). A restart-mode consumer read A, and while it was not polling
its fetcher queued B and B's marker; its close handled the marker and committed 12, so the
new consumer resumed at C: B was skipped. The skip is named librdkafka#3400 only where the
mechanism leaves its mark: the first read after the reader's own restart, right after an
offset that holds no record, in a run with transactional producers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History

BUG = "librdkafka#3400"
TXNS = {"A": range(0, 5), "B": range(6, 11), "C": range(12, 15)}


def _history(resume: int, mode: str = "restart", restart: bool = True,
             transactional: bool = True, client: str = "confluent-kafka") -> History:
    """c0 reads A (polls 1-5), restarts at poll 6 and reads from ``resume`` on (poll 8)."""
    h = History()
    h.run["versions"] = {"client": client,
                         "librdkafka": "2.16.0" if client == "confluent-kafka" else None}
    h.run["workload"] = {"consumers": [{"id": "c0", "mode": mode}],
                         "transactions": {"enabled": transactional}}
    if transactional:
        h.run["producer_config"] = {"transactional.id": "kc-txn-{producer}", "acks": "all",
                                    "enable.idempotence": "true"}
    seq = 0
    for name, offsets in TXNS.items():
        for off in offsets:
            # without transactions the same offsets, their gaps left by records nobody read
            h.write(0, seq, offset=off, txn=f"kc-txn-0:{name}" if transactional else None,
                    txn_outcome="committed" if transactional else None)
            h.drain(0, off, 0, seq)
            seq += 1
    for i, off in enumerate(TXNS["A"]):
        h.read("c0", 0, off, 0, i, poll=1 + i, mode=mode)
    for i, off in enumerate(o for o in range(resume, 15) if o not in (5, 11)):
        h.read("c0", 0, off, 0, off - (off > 5) - (off > 11), poll=8 + i, mode=mode)
    if restart:
        h.event("rebalance", at_ms=1001, reader="c0", what="restart", poll=6,
                partitions=["t:0"])
    h.drain_end()
    return h


def _skip(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = r["anomalies"]["poll-skip"]
    return out


@pytest.mark.spark
def test_a_close_that_committed_past_a_marker_is_a_skip_named_3400(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_history(resume=12))
    skip = _skip(r)
    assert skip["count"] == 1 and not skip["allowed"]
    ex = skip["examples"][0]
    assert (ex["reader"], ex["prev_offset"], ex["offset"]) == ("c0", 4, 12)
    assert ex["known_bug"]["id"] == BUG
    assert skip["known_bugs"] == {BUG: 1}
    assert r["valid"] is False


@pytest.mark.spark
def test_look_alikes_name_nothing(check) -> None:  # type: ignore[no-untyped-def]
    # resumed inside B (offset 8: a record lies below it): a skip, not this bug's
    # (accepted, as an explore accepts every catalogue entry: the look-alike still fails)
    h = _history(resume=8)
    h.run["accept_known"] = [BUG]
    res = check(h)
    inside = _skip(res)
    assert inside["count"] == 1 and inside["known_bugs"] == {} and res["valid"] is False
    # no restart between the reads: a running reader's skip
    running = _skip(check(_history(resume=12, restart=False)))
    assert running["count"] == 1 and running["known_bugs"] == {}
    # no transactional producer: the empty offset is no marker
    plain = _skip(check(_history(resume=12, transactional=False)))
    assert plain["count"] == 1 and plain["known_bugs"] == {}

