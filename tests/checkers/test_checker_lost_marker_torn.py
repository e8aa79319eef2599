"""A torn transaction named lost-marker-next-txn (literal histories): an unknown-outcome
transaction visible in part, with an unclean election of its partition between its first
attempt and its read (the elected replica held it without its marker, and the producer's next
marker closed it); look-alikes with the election before the transaction, or a clean leader
change, name nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check_run
from contract.known_bugs import LOST_MARKER_NEXT_TXN
from tests.support.literal import History

pytestmark = pytest.mark.spark


def _history() -> History:
    h = History()
    h.run["workload"] = {"transactions": {"enabled": True},
                         "drain": {"isolation_level": "read_committed"}}
    h.run["producer_config"]["transactional.id"] = "kc-txn-0"
    ends: dict[str, int] = {}

    def torn(p: int, topic: str, at_ms: int) -> None:
        """Records 0-2 visible (read by the drain at 60 s), record 3 acknowledged at an
        offset the election truncated: read by nobody."""
        for s in range(4):
            h.write(p, s, offset=s, txn=f"kc-txn-{p}:0", txn_outcome="unknown", topic=topic,
                    at_ms=at_ms + s)
            if s < 3:
                h.drain(0, s, p, s, topic=topic, at_ms=60_000 + s)
        ends[f"{topic}:0"] = 3

    # the follower elected uncleanly at 9 s (not in the last ISR [1]) held the records
    torn(1, "unclean", 2_000)
    h.observe(0, 0, 1, [1, 2, 3], 0, "unclean").observe(5_000, 0, 1, [1], 0, "unclean")
    h.observe(8_000, 0, -1, [1], 0, "unclean").observe(9_000, 0, 2, [2], 1, "unclean")
    # an unclean election before the transaction began: nothing to do with its marker
    torn(2, "before", 20_000)
    h.observe(0, 0, 1, [1, 2, 3], 0, "before").observe(5_000, 0, 1, [1], 0, "before")
    h.observe(9_000, 0, 2, [2], 1, "before")
    # a clean leader change (the new leader was in the last ISR) during the transaction
    torn(3, "clean", 2_000)
    h.observe(0, 0, 1, [1, 2, 3], 0, "clean").observe(9_000, 0, 2, [2, 3], 1, "clean")
    h.drain_end(True, ends, isolation_level="read_committed")
    return h


def test_a_torn_transaction_after_an_unclean_election_is_named(spark: object,
                                                                tmp_path: Path) -> None:
    r = check_run(_history().save(tmp_path / "run"))
    assert "error" not in r, r.get("traceback")
    torn = r["anomalies"]["torn-transaction"]
    assert torn["count"] == 9 and torn["allowed"] is False
    # before: torn, named nothing (known_bugs {})
    assert torn["known_bugs"] == {LOST_MARKER_NEXT_TXN: 3}
    named = {(e["producer"], e["seq"]) for e in torn["examples"] if "known_bug" in e}
    assert named == {(1, 0), (1, 1), (1, 2)}
    assert r["valid"] is False
