"""A producer the run killed inside a call it entered with its rows written
(checkers/killed_in_call.py): offsets-coordinator-fenced's send_offsets_to_transaction that
never returns (librdkafka#5511). On the old checker every run here was ``unknown`` (a
producer that did not end cleanly, and its liveness not told); now the history proves the
unclean end harmless when no reader could be served its open transaction, and the producer
blocked through the liveness phase is stuck, named by its hung call's facts.

The liveness phase runs from 20 s to 30 s (tests/checkers/test_liveness.py's shape).
"""

from __future__ import annotations

from typing import Any

import pytest

from contract.events import END, START
from contract.liveness import HUNG_CALL
from tests.checkers.test_liveness import HI, LO, _live_producers, _run
from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark

BUG = "librdkafka#5511"


def _fenced_run(*, rows_written: bool = True, returned: bool = False, since_ms: int = 8_000,
                drain: str = "read_committed", reader: str = "read_committed",
                coordinator: int = 2, accept: bool = True,
                other: str | None = None) -> History:
    """p1 and p2 live; p4 (transactional, send_offsets) entered send_offsets_to_transaction
    (timeout 5 s) at ``since_ms`` while the run held its group's coordinator, broker 2,
    down for 40 s (session timeout 3 s: fenced); the call never returned and the run
    killed p4 after the phase (exit code -9). ``other``: a reader u1 with that isolation
    level and no mode of its own (a test body's) read too."""
    h = _live_producers(_run({"c0": "assign"}, exits={"p4": -9}))
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 2000)
    if other is not None:
        h.run["workload"]["consumers"].append({"id": "u1", "isolation_level": other})
        h.read("u1", 0, 0, 1, 0, at_ms=LO + 2500)
    h.run["consumer_config"]["isolation.level"] = reader
    h.run["workload"]["drain"] = {"isolation_level": drain}
    h.run["versions"] = {"librdkafka": "2.16.0"}
    h.run["broker_config"] = {"broker.session.timeout.ms": "3000"}
    if accept:
        h.run["accept_known"] = [BUG]
    h.event("kill", START, 5_000, targets=[2], target="random",
            coordinators={"invoicer": coordinator}, txn_coordinators={"invoicer-tx": 3})
    h.event("kill", END, 45_000, targets=[2], target="random")
    note: dict[str, Any] = {"group": "invoicer", "transactional_id": "invoicer-tx",
                            **({"rows_written": True} if rows_written else {})}
    since = BASE_NS + since_ms * MS
    h.event(HUNG_CALL, START, since_ms + 10_500, client="p4",
            call="send_offsets_to_transaction", timeout_s=5, since_ns=since, **note)
    h.event(HUNG_CALL, END, HI + 5_000, client="p4", call="send_offsets_to_transaction",
            timeout_s=5, since_ns=since, blocked_s=(HI + 5_000 - since_ms) / 1000,
            returned=returned, **note)
    return h


def test_a_producer_killed_in_a_call_entered_with_its_rows_written_is_judged(check) -> None:  # type: ignore[no-untyped-def]
    res = check(_fenced_run())
    assert "unknown_reasons" not in res, res.get("unknown_reasons")  # was: unknown
    assert res["stats"]["killed_in_call"] == [
        "p4 (exit code -9) ended inside send_offsets_to_transaction(), entered with its "
        "rows written, which never returned"]
    stuck, hung = res["anomalies"]["stuck-producer"], res["anomalies"]["hung-call"]
    assert (stuck["count"], stuck["known_bugs"]) == (1, {BUG: 1}), stuck
    assert stuck["examples"][0]["blocked_in"]["call"] == "send_offsets_to_transaction"
    assert (hung["count"], hung["known_bugs"]) == (1, {BUG: 1}), hung
    assert stuck["accepted"] == 1 and hung["accepted"] == 1 and res["valid"] is True
    # named, not accepted: the stuck producer and the hung call fail the run
    assert check(_fenced_run(accept=False))["valid"] is False


def test_a_stuck_producer_names_the_bug_only_by_its_calls_facts(check) -> None:  # type: ignore[no-untyped-def]
    """The killed broker did not coordinate the call's group: the call's wait is not
    #5511's, and neither is the producer it held."""
    res = check(_fenced_run(coordinator=1))
    stuck = res["anomalies"]["stuck-producer"]
    assert (stuck["count"], stuck["known_bugs"]) == (1, {}), stuck
    assert res["anomalies"]["hung-call"]["known_bugs"] == {}
    assert res["valid"] is False


@pytest.mark.parametrize(("case", "reason"), [
    # the producer did not say it had written its rows: anything may be missing
    ({"rows_written": False}, "did not end cleanly"),
    # the call returned: the process went on and died elsewhere
    ({"returned": True}, "did not end cleanly"),
    # a read_uncommitted reader could be served the open transaction's records
    ({"drain": "read_uncommitted"}, "but drain reads read_uncommitted"),
    ({"reader": "read_uncommitted"}, "but c0 reads read_uncommitted"),
    ({"other": "read_uncommitted"}, "but u1 reads read_uncommitted"),
])
def test_a_killed_producer_not_proved_harmless_is_unknown(check, case, reason) -> None:  # type: ignore[no-untyped-def]
    res = check(_fenced_run(**case))
    assert res["valid"] == "unknown", case
    assert any(reason in r and "p4 (exit code -9)" in r for r in res["unknown_reasons"]), \
        res["unknown_reasons"]


def test_a_call_entered_inside_the_phase_leaves_its_liveness_untold(check) -> None:  # type: ignore[no-untyped-def]
    """Entered after the phase began: acknowledgements of its open transaction could have
    come before it, unwritten. Its end is proved harmless, its liveness is not told."""
    res = check(_fenced_run(since_ms=LO + 1_000))
    assert res["stats"]["killed_in_call"]
    assert res["anomalies"]["stuck-producer"]["count"] == 0
    assert [r for r in res["unknown_reasons"] if r.startswith("liveness of p4 cannot be told")]
    assert res["valid"] == "unknown"
