"""Liveness after the final heal (issue 46): stuck-producer, stuck-consumer and hung-call on
literal histories. None of these kinds existed before: every test here fails on the old
checker (its results have no such entries, and its verdict was VALID on each stuck run).

The liveness phase here runs from 20 s to 30 s with a bound of 10 s and the default 5 s
slack; everything before it is the workload under faults.
"""

from __future__ import annotations

from typing import Any

import pytest

from contract.events import (
    CLIENT_LOG,
    CONSUMERS_STOPPED,
    END,
    INSTANT,
    PHASE,
    REBALANCE,
    START,
)
from contract.liveness import HUNG_CALL, LIVENESS_PHASE
from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark

LO, HI = 20_000, 30_000  # the liveness phase (ms)


def _run(readers: dict[str, str], exits: dict[str, int] | None = None,
         end_ms: int = HI, group: str = "g") -> History:
    """Producers p1 and p2 and the given readers (name -> mode); p1 writes 0..3 to
    partition 0 before the phase, the drain reads them all; nobody read anything yet."""
    h = History()
    h.run["workload"] = {"liveness_s": 10,
                         "consumers": [{"id": r, "mode": m} for r, m in readers.items()]}
    h.run["consumer_config"] = {"group.id": group}
    for s in range(4):
        h.write(1, s, offset=s, at_ms=1000 + s).drain(0, s, 1, s, at_ms=60_000 + s)
    h.event(PHASE, START, LO, name=LIVENESS_PHASE, bound_s=10, slack_s=5)
    h.event(PHASE, END, end_ms, name=LIVENESS_PHASE, progressed={})
    codes = {"p1": 0, "p2": 0, **{r: 0 for r in readers}, **(exits or {})}
    h.event(PHASE, END, end_ms + 100, name="workload",
            producers={n: {"exitcode": c} for n, c in codes.items() if n.startswith("p")})
    h.drain_end(end_offsets={"t:0": 4}, at_ms=61_000)
    h.event(CONSUMERS_STOPPED, at_ms=62_000,
            consumers={n: {"exitcode": c} for n, c in codes.items() if not n.startswith("p")})
    return h


def _live_producers(h: History) -> History:
    """p1 and p2 both acknowledged inside the phase (offsets 4 and 5, drained)."""
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.write(2, 0, offset=5, at_ms=LO + 600).drain(0, 5, 2, 0, at_ms=60_011)
    return h


def _kinds(res: dict[str, Any]) -> dict[str, int]:
    return {k: res["anomalies"][k]["count"]
            for k in ("stuck-producer", "stuck-consumer", "hung-call")}


def test_a_stuck_producer_a_stuck_consumer_and_a_hung_call(check) -> None:  # type: ignore[no-untyped-def]
    h = _run({"c0": "assign", "c1": "assign"})
    # p1 acknowledged in the phase; p2 wrote before it only and then nothing was answered
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.write(2, 0, offset=5, at_ms=5_000).drain(0, 5, 2, 0, at_ms=60_011)
    h.write(2, 1, outcome="info", at_ms=LO + 100, complete=False)
    # c0 reads on in the phase; c1 read offset 0 long before and nothing after
    for o in range(3):
        h.read("c0", 0, o, 1, o, at_ms=LO + 1000 + o)
    h.read("c1", 0, 0, 1, 0, at_ms=1500)
    # p2's poll(0.1) blocked from 24 s until the run stopped it
    h.event(HUNG_CALL, START, 29_000, client="p2", call="poll", timeout_s=0.1,
            since_ns=BASE_NS + 24_000 * MS)
    h.event(HUNG_CALL, END, 95_000, client="p2", call="poll", timeout_s=0.1,
            since_ns=BASE_NS + 24_000 * MS, blocked_s=71.0, returned=False)
    res = check(h)
    assert _kinds(res) == {"stuck-producer": 1, "stuck-consumer": 1, "hung-call": 1}
    assert res["valid"] is False
    for kind in ("stuck-producer", "stuck-consumer", "hung-call"):
        assert res["anomalies"][kind]["allowed"] is False
    assert [e["client"] for e in res["anomalies"]["stuck-producer"]["examples"]] == ["p2"]
    stuck = res["anomalies"]["stuck-consumer"]["examples"][0]
    assert stuck["client"] == "c1"
    assert stuck["behind"] == {"t:0": {"read_up_to": 0, "acknowledged_up_to": 5}}
    hung = res["anomalies"]["hung-call"]["examples"][0]
    assert (hung["client"], hung["call"], hung["returned"]) == ("p2", "poll", False)
    assert "never returned" in hung["summary"]


def test_every_client_live_is_valid(check) -> None:  # type: ignore[no-untyped-def]
    h = _live_producers(_run({"c0": "assign"}))
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 2000)
    res = check(h)
    assert _kinds(res) == {"stuck-producer": 0, "stuck-consumer": 0, "hung-call": 0}
    assert all(res["anomalies"][k].get("checked") is not False
               for k in ("stuck-producer", "stuck-consumer", "hung-call"))
    assert res["valid"] is True, res.get("unknown_reasons")


def test_a_consumer_at_the_log_end_is_not_stuck(check) -> None:  # type: ignore[no-untyped-def]
    # c0 read everything acknowledged up to the slack before the bound's end (offsets 0-3
    # before the phase); offset 4 was acknowledged 1 s before the end: within the slack
    h = _run({"c0": "assign"})
    for o in range(4):
        h.read("c0", 0, o, 1, o, at_ms=2000 + o)
    h.write(1, 4, offset=4, at_ms=HI - 1000).drain(0, 4, 1, 4, at_ms=60_010)
    h.write(2, 0, offset=5, at_ms=HI - 900).drain(0, 5, 2, 0, at_ms=60_011)
    res = check(h)
    assert _kinds(res)["stuck-consumer"] == 0
    # the same history with the two writes 6 s before the end: c0 had them to read
    h = _run({"c0": "assign"})
    for o in range(4):
        h.read("c0", 0, o, 1, o, at_ms=2000 + o)
    h.write(1, 4, offset=4, at_ms=HI - 6000).drain(0, 4, 1, 4, at_ms=60_010)
    h.write(2, 0, offset=5, at_ms=HI - 6000).drain(0, 5, 2, 0, at_ms=60_011)
    assert _kinds(check(h))["stuck-consumer"] == 1


def test_a_subscribe_group_is_judged_as_one(check) -> None:  # type: ignore[no-untyped-def]
    # c1 holds no partition (two members, one partition): c0's reads keep the group live
    h = _live_producers(_run({"c0": "subscribe", "c1": "subscribe"}))
    h.read("c0", 0, 0, 1, 0, mode="subscribe", at_ms=LO + 1000)
    assert _kinds(check(h))["stuck-consumer"] == 0
    h = _live_producers(_run({"c0": "subscribe", "c1": "subscribe"}))
    h.read("c0", 0, 0, 1, 0, mode="subscribe", at_ms=1000)
    res = check(h)
    assert _kinds(res)["stuck-consumer"] == 1
    ex = res["anomalies"]["stuck-consumer"]["examples"][0]
    assert (ex["client"], ex["readers"]) == ("group g", ["c0", "c1"])


def test_a_client_the_run_cannot_judge_is_unknown(check) -> None:  # type: ignore[no-untyped-def]
    # p2 ended with SIGKILL: its unwritten rows may hold acknowledgements of the phase
    h = _run({"c0": "assign"}, exits={"p2": -9})
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 900)
    res = check(h)
    assert _kinds(res)["stuck-producer"] == 0
    assert res["valid"] == "unknown"
    assert any("liveness of p2 cannot be told" in r for r in res["unknown_reasons"])
    # a phase that ended after 2 s, before its bound: no progress proves nothing yet
    h = _run({"c0": "assign"}, end_ms=LO + 2000)
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    res = check(h)
    assert _kinds(res) == {"stuck-producer": 0, "stuck-consumer": 0, "hung-call": 0}
    reasons = [r for r in res["unknown_reasons"] if "liveness of" in r]
    assert len(reasons) == 2 and all("before its bound of 10 s" in r for r in reasons)


def test_a_run_without_the_phase(check) -> None:  # type: ignore[no-untyped-def]
    # liveness off (0): the stuck kinds are not checked, hung calls still are
    h = _run({"c0": "assign"})
    h.run["workload"]["liveness_s"] = 0
    h.event(HUNG_CALL, START, 29_000, client="c0", call="close", timeout_s=None,
            since_ns=BASE_NS + 10_000 * MS)
    res = check(h)
    assert res["anomalies"]["stuck-producer"]["checked"] is False
    assert res["anomalies"]["stuck-consumer"]["checked"] is False
    assert res["anomalies"]["hung-call"]["count"] == 1
    hung = res["anomalies"]["hung-call"]["examples"][0]
    assert "still blocked when the run ended" in hung["summary"]
    # a phase that was due but never recorded (the run crashed before its heal): unknown
    h = History()
    h.run["workload"] = {"liveness_s": 30, "consumers": []}
    h.write(1, 0, offset=0).drain(0, 0, 1, 0).drain_end(end_offsets={"t:0": 1})
    res = check(h)
    assert res["valid"] == "unknown"
    assert any("no liveness phase" in r for r in res["unknown_reasons"])
    # a history recorded before liveness was checked: not checked, nothing unknown
    h = History()
    h.write(1, 0, offset=0).drain(0, 0, 1, 0).drain_end(end_offsets={"t:0": 1})
    res = check(h)
    assert res["valid"] is True
    assert all(res["anomalies"][k]["checked"] is False
               for k in ("stuck-producer", "stuck-consumer", "hung-call"))


def _cut_run(version: str, p2_acked_ms: int | None) -> History:
    """p1 live in the phase, c0 reading; the client host cut from all three brokers from 5 s
    to 15 s; p2 acknowledged once at ``p2_acked_ms`` (None: never) and nothing after."""
    h = _run({"c0": "assign"})
    h.run["versions"] = {"librdkafka": version}
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 900)
    if p2_acked_ms is not None:
        h.write(2, 0, offset=5, at_ms=p2_acked_ms).drain(0, 5, 2, 0, at_ms=60_011)
    h.event("partition", START, 5_000, targets=[1, 2, 3], shape="client", target="all")
    h.event("partition", END, 15_000, targets=[1, 2, 3], shape="client")
    return h


def test_a_producer_stuck_after_all_brokers_were_down_names_no_bug(check) -> None:  # type: ignore[no-untyped-def]
    # librdkafka#5088's re-bootstrap loop catches only a client with nothing to send (a
    # producer with records reconnects a learned broker on its own): a stuck producer is
    # nothing it could cause, on its affected release either (checkers/reconnect.py counts
    # the idle client it leaves reporting every broker down)
    for version in ("2.10.0", "2.10.1"):
        stuck = check(_cut_run(version, 1_000))["anomalies"]["stuck-producer"]
        assert stuck["count"] == 1 and stuck["known_bugs"] == {}


def _leader_unknown_run(p2_acked_ms: int, logged_ms: int | None) -> History:
    """p1 live in the phase, c0 reading; p2 acknowledged last at ``p2_acked_ms`` and then
    logged librdkafka's 'new leader-1 not found in cache' at ``logged_ms`` (None: never)."""
    h = _run({"c0": "assign"})
    h.run["versions"] = {"librdkafka": "2.16.0"}
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 900)
    h.write(2, 0, offset=5, at_ms=p2_acked_ms).drain(0, 5, 2, 0, at_ms=60_011)
    if logged_ms is not None:
        h.event(CLIENT_LOG, INSTANT, logged_ms, client="p2", bug="librdkafka#5430",
                line="Partition t(x)[0]: new leader-1 not found in cache")
    return h


def test_a_producer_stuck_after_logging_leader_minus_one_names_librdkafka_5430(check) -> None:  # type: ignore[no-untyped-def]
    """A controller-partition suite run: p0 logged the line 0.2 s after its last
    acknowledgement and was never acknowledged again."""
    res = check(_leader_unknown_run(10_000, 10_200))
    stuck = res["anomalies"]["stuck-producer"]
    assert stuck["count"] == 1 and stuck["known_bugs"] == {"librdkafka#5430": 1}  # was {}
    h = _leader_unknown_run(10_000, 10_200)
    h.run["accept_known"] = ["librdkafka#5430"]
    res = check(h)
    assert res["anomalies"]["stuck-producer"]["accepted"] == 1 and res["valid"] is True
    # the line came before an acknowledgement (the client got over it), or never: not it
    for acked, logged in ((10_000, 9_000), (10_000, None)):
        stuck = check(_leader_unknown_run(acked, logged))["anomalies"]["stuck-producer"]
        assert stuck["count"] == 1 and stuck["known_bugs"] == {}, (acked, logged)


def _offsets_run(*, coordinator: int = 2, kill_ms: tuple[int, int] = (5_000, 12_000),
                 call: str = "send_offsets_to_transaction", since_ms: int = 8_000,
                 group: str | None = "invoicer", session_ms: int | None = None,
                 librdkafka: str = "2.16.0", txn_coordinator: int | None = 3,
                 cut_txn_coordinator: bool = False) -> History:
    """Every client live; broker 2 killed over ``kill_ms`` (the kill's start event records
    ``coordinator`` as the group's coordinator and ``txn_coordinator`` as the transaction's,
    None: not known); p4's ``call`` (timeout 20 s) from ``since_ms`` blocked 35 s, then
    returned (the copy service's suite run)."""
    h = _live_producers(_run({"c0": "assign"}))
    h.read("c0", 0, 0, 1, 0, at_ms=LO + 2000)
    h.run["versions"] = {"librdkafka": librdkafka}
    if session_ms is not None:
        h.run["broker_config"] = {"broker.session.timeout.ms": str(session_ms)}
    txn = {"txn_coordinators": {"invoicer-tx": txn_coordinator}} if txn_coordinator else {}
    h.event("kill", START, kill_ms[0], targets=[2], target="random",
            coordinators={"invoicer": coordinator}, **txn)
    h.event("kill", END, kill_ms[1], targets=[2], target="random")
    if cut_txn_coordinator:  # broker 3 (the transaction's coordinator) isolated in the call
        h.event("partition", START, since_ms + 1_000, targets=[3], shape="isolate")
        h.event("partition", END, since_ms + 9_000, targets=[3], shape="isolate")
    note = {"group": group, "transactional_id": "invoicer-tx"} if group else {}
    since = BASE_NS + since_ms * MS
    h.event(HUNG_CALL, START, since_ms + 25_000, client="p4", call=call, timeout_s=20,
            since_ns=since, **note)
    h.event(HUNG_CALL, END, since_ms + 35_000, client="p4", call=call, timeout_s=20,
            since_ns=since, blocked_s=35.0, returned=True, **note)
    return h


def _hung_bugs(res: dict[str, Any]) -> dict[str, int]:
    hung = res["anomalies"]["hung-call"]
    assert hung["count"] == 1, hung
    return dict(hung["known_bugs"])


def test_a_hung_send_offsets_whose_group_coordinator_was_down_names_librdkafka_5456(check) -> None:  # type: ignore[no-untyped-def]
    """A send_offsets_to_transaction blocked past its timeout while the run had killed
    the broker coordinating its group: #5456; with the kill past the session timeout (the
    coordinator fenced, gone from metadata): #5511."""
    res = check(_offsets_run())
    assert _hung_bugs(res) == {"librdkafka#5456": 1}  # was {}
    assert res["anomalies"]["hung-call"]["examples"][0]["group"] == "invoicer"
    assert res["valid"] is False  # a name alone changes nothing
    h = _offsets_run()
    h.run["accept_known"] = ["librdkafka#5456"]
    res = check(h)
    assert res["anomalies"]["hung-call"]["accepted"] == 1 and res["valid"] is True
    # held 7 s, the brokers' session timeout 3 s: fenced
    assert _hung_bugs(check(_offsets_run(session_ms=3000))) == {"librdkafka#5511": 1}
    # ... but #5511 is reported from 2.10.0 on: an older client's hang is #5456's
    assert _hung_bugs(check(_offsets_run(session_ms=3000, librdkafka="2.8.0"))) == {
        "librdkafka#5456": 1}


@pytest.mark.parametrize("case", [
    {"coordinator": 1},  # the killed broker did not coordinate the group
    {"kill_ms": (1_000, 7_000)},  # the coordinator was back before the call began
    {"since_ms": 4_000, "kill_ms": (25_000, 30_000)},  # down only after the call's timeout
    {"call": "commit_transaction"},  # another call: not this bug's
    {"group": None},  # the call's group is not known
    {"txn_coordinator": 2},  # the transaction's coordinator was down too: it waited there
    {"txn_coordinator": None},  # the transaction's coordinator not known at the kill
    {"cut_txn_coordinator": True},  # a partition cut the transaction's coordinator meanwhile
])
def test_a_hung_send_offsets_without_its_coordinators_fault_names_no_bug(check, case) -> None:  # type: ignore[no-untyped-def]
    res = check(_offsets_run(**case))
    assert _hung_bugs(res) == {}, case
    assert res["valid"] is False


def _kip848_restart_run(broker_config: dict[str, str]) -> History:
    """The explore finding's shape: a restart-mode KIP-848 reader that read nothing in the
    phase while acknowledged records waited (its old member's leave was lost)."""
    h = _live_producers(_run({"c0": "restart"}))
    h.run["workload"]["consumers"] = [{"id": "c0", "mode": "restart",
                                       "group_protocol": "consumer"}]
    h.run["broker_config"] = broker_config
    return h


def test_a_kip848_group_a_session_timeout_outlasts_is_not_judged(check) -> None:  # type: ignore[no-untyped-def]
    # the brokers' default session timeout (45 s) outlasts the 10 s bound: a stale member
    # may rightly hold the partitions for all of it (was: stuck-consumer, INVALID)
    res = check(_kip848_restart_run({}))
    assert _kinds(res)["stuck-consumer"] == 0 and res["valid"] == "unknown"
    assert any("liveness of c0 cannot be told" in r and "(45 s)" in r
               for r in res["unknown_reasons"]), res["unknown_reasons"]
    # a 3 s session timeout and the 5 s slack fit in the bound: the same silence is stuck
    res = check(_kip848_restart_run({"group.consumer.session.timeout.ms": "3000"}))
    assert _kinds(res)["stuck-consumer"] == 1 and res["valid"] is False


def _no_brokers_run(version: str, logged: dict[str, int], p2_acked_ms: int = 10_000,
                    c0_read_ms: int = 9_000) -> History:
    """p1 live in the phase; p2 acknowledged last at ``p2_acked_ms``; c0 (assign) read
    offset 0 at ``c0_read_ms`` and nothing after; ``logged``: client -> when it logged
    librdkafka's metadata line with no broker (a brokers-fenced run's shape)."""
    h = _run({"c0": "assign"})
    h.run["versions"] = {"librdkafka": version}
    h.write(1, 4, offset=4, at_ms=LO + 500).drain(0, 4, 1, 4, at_ms=60_010)
    h.write(2, 0, offset=5, at_ms=p2_acked_ms).drain(0, 5, 2, 0, at_ms=60_011)
    h.read("c0", 0, 0, 1, 0, at_ms=c0_read_ms)
    for client, at in logged.items():
        h.event(CLIENT_LOG, INSTANT, at, client=client, bug="librdkafka#5301",
                line="172.24.50.13:9092/3: 0 brokers, 1 topics")
    return h


def test_a_client_left_without_a_broker_names_librdkafka_5301(check) -> None:  # type: ignore[no-untyped-def]
    """p2 and c0 logged a metadata response with no broker after their last progress and
    made none after: both named (the old checker named neither). With the leader -1 line
    logged too, the producer is named by #5301: with no broker left, no leader helps."""
    h = _no_brokers_run("2.16.2", {"p2": 10_300, "c0": 10_400})
    h.event(CLIENT_LOG, INSTANT, 10_250, client="p2", bug="librdkafka#5430",
            line="Partition t(x)[0]: new leader-1 not found in cache")
    res = check(h)
    for kind in ("stuck-producer", "stuck-consumer"):
        stuck = res["anomalies"][kind]
        assert stuck["count"] == 1 and stuck["known_bugs"] == {"librdkafka#5301": 1}, kind
    assert res["valid"] is False
    h = _no_brokers_run("2.16.2", {"p2": 10_300, "c0": 10_400})
    h.run["accept_known"] = ["librdkafka#5301"]
    res = check(h)
    assert res["valid"] is True and res["anomalies"]["stuck-consumer"]["accepted"] == 1


@pytest.mark.parametrize("case", [
    "before-progress", "another-client", "after-the-window", "before-2.12"])
def test_a_stuck_client_without_its_no_broker_line_names_no_bug(check, case) -> None:  # type: ignore[no-untyped-def]
    """The line before the client's last progress (it got over it), only another client's
    line, a line after the window's end, or a release before the bug: nothing named."""
    logged, version = {
        "before-progress": ({"p2": 9_500, "c0": 8_500}, "2.16.2"),
        "another-client": ({"p1": 10_300}, "2.16.2"),
        "after-the-window": ({"p2": HI + 1_000, "c0": HI + 1_000}, "2.16.2"),
        "before-2.12": ({"p2": 10_300, "c0": 10_400}, "2.11.1"),
    }[case]
    res = check(_no_brokers_run(version, logged))
    for kind in ("stuck-producer", "stuck-consumer"):
        stuck = res["anomalies"][kind]
        assert stuck["count"] == 1 and stuck["known_bugs"] == {}, (case, kind)


@pytest.mark.parametrize(("max_records", "stuck"), [(4, 0), (5, 1), (0, 1)])
def test_a_producer_that_wrote_its_max_records_is_not_stuck(check, max_records: int,
                                                           stuck: int) -> None:  # type: ignore[no-untyped-def]
    # p1 wrote seqs 0..3 before the phase and nothing in it, p2 acknowledged in it: with
    # max_records 4 p1 had stopped by itself (was stuck-producer before); with 5 it had one
    # record left to send, and without a limit it writes for the whole run: stuck
    h = _run({})
    h.write(2, 0, offset=4, at_ms=LO + 600).drain(0, 4, 2, 0, at_ms=60_011)
    if max_records:
        h.run["workload"]["max_records"] = max_records
    res = check(h)
    assert _kinds(res)["stuck-producer"] == stuck
    assert [e["client"] for e in res["anomalies"]["stuck-producer"]["examples"]] == \
        ["p1"] * stuck


def _coordinator_moved_run(logged_ms: int | None, read_ms: int | None = None,
                           revoked_ms: int | None = None) -> History:
    """p1 and p2 live in the phase; c0 (subscribe, alone in group g) read offset 0 of t:0 at
    8 s, restarted at 8.5 s and was assigned t:0 at 9 s, and read nothing after (or offset
    1 at ``read_ms``); ``logged_ms``: when it logged librdkafka's request-level
    NOT_COORDINATOR answer to its OffsetFetch (a coordinator-moved-on-assign run's shape)."""
    h = _live_producers(_run({"c0": "subscribe"}))
    h.run["versions"] = {"librdkafka": "2.16.0"}
    h.read("c0", 0, 0, 1, 0, mode="subscribe", at_ms=8_000)
    h.event(REBALANCE, INSTANT, 8_500, reader="c0", what="restart", poll=2, partitions=["t:0"])
    h.event(REBALANCE, INSTANT, 9_000, reader="c0", what="assigned", poll=3,
            partitions=["t:0"])
    if logged_ms is not None:
        h.event(CLIENT_LOG, INSTANT, logged_ms, client="c0", bug="librdkafka#5586",
                line="[thrd:main]: Offset fetch error for 0 partition(s): Broker: Not "
                     "coordinator")
    if revoked_ms is not None:
        h.event(REBALANCE, INSTANT, revoked_ms, reader="c0", what="revoked", poll=4,
                partitions=["t:0"])
    if read_ms is not None:
        h.read("c0", 0, 1, 1, 1, mode="subscribe", at_ms=read_ms)
    return h


def test_a_consumer_whose_offset_fetch_got_not_coordinator_names_librdkafka_5586(check) -> None:  # type: ignore[no-untyped-def]
    """c0's assignment's OffsetFetch was answered NOT_COORDINATOR as a whole and c0 never
    read the partition again: named (the checker without the fact named nothing)."""
    res = check(_coordinator_moved_run(9_200))
    stuck = res["anomalies"]["stuck-consumer"]
    assert stuck["count"] == 1 and stuck["known_bugs"] == {"librdkafka#5586": 1}
    assert res["valid"] is False
    h = _coordinator_moved_run(9_200)
    h.run["accept_known"] = ["librdkafka#5586"]
    res = check(h)
    assert res["valid"] is True and res["anomalies"]["stuck-consumer"]["accepted"] == 1


@pytest.mark.parametrize("case", [
    "no-line", "line-before-the-assignment", "read-after-the-line", "after-the-window",
    "revoked-after"])
def test_a_stuck_consumer_without_its_failed_offset_fetch_names_no_bug(check, case) -> None:  # type: ignore[no-untyped-def]
    """No line; the line before the assignment (another assignment's fetch); a read of the
    partition after the line (its fetch started after all); the line after the window's
    end; the partition revoked after the assignment: stuck, and not by this bug."""
    h = {"no-line": lambda: _coordinator_moved_run(None),
         "line-before-the-assignment": lambda: _coordinator_moved_run(8_700),
         "read-after-the-line": lambda: _coordinator_moved_run(9_200, read_ms=12_000),
         "after-the-window": lambda: _coordinator_moved_run(HI + 1_000),
         "revoked-after": lambda: _coordinator_moved_run(9_200, revoked_ms=9_500)}[case]()
    # accepted as coordinator-moved-on-assign accepts it: the look-alike still fails the run
    h.run["accept_known"] = ["librdkafka#5586"]
    res = check(h)
    stuck = res["anomalies"]["stuck-consumer"]
    assert stuck["count"] == 1 and stuck["known_bugs"] == {}, case
    assert res["valid"] is False and not stuck["allowed"], case
