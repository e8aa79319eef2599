"""down-after-heal on literal histories: a producer whose client went on reporting every
broker down past the liveness bound after the faults healed, while another producer was
acknowledged (librdkafka#5088's loop). The kind did not exist before: each test here fails
on the old checker (its results have no such entry).

p1 is acknowledged every 500 ms from 1 s to 45 s; the client host is cut from all three
brokers from 5 s to 8 s; p2, idle, reported every broker down at 6 s (in the cut) and then
every second from ``first_s`` to ``last_s``. The liveness bound is 10 s, so a report counts
from 18 s on; the liveness phase itself (40-50 s) sees both producers acknowledged.
"""

from __future__ import annotations

from typing import Any

import pytest

from contract.events import CLIENT_ERROR, CONSUMERS_STOPPED, END, PHASE, START
from contract.liveness import LIVENESS_PHASE
from tests.support.literal import BASE_NS, MS, History

pytestmark = pytest.mark.spark

KIND = "down-after-heal"
LOOP = "librdkafka#5088"


def _history(librdkafka: str = "2.10.0", first_s: int = 9, last_s: int = 35,
             p1_until_s: float = 45.0, cut: str = "client", client: str | None = None,
             more: list[tuple[str, int, int]] = (),  # type: ignore[assignment]
             early: tuple[int, ...] = ()) -> History:
    """``cut``: the fault from 5 s to 8 s (begun at 4.9 s: its start event follows its
    rules), ``client`` (the client host from every broker) or ``kill`` (broker 1);
    ``more``: further faults (kind, start ms, end ms) on broker 1; ``early``: more reports
    of p2 (ms)."""
    h = History()
    h.run["versions"] = {"librdkafka": librdkafka,
                         **({"client": client} if client is not None else {})}
    h.run["workload"] = {"liveness_s": 10, "consumers": []}
    times = sorted({*range(1000, int(p1_until_s * 1000) + 1, 500), *range(40_000, 45_001, 500)})
    for offset, t in enumerate(times):
        h.write(1, offset, offset=offset, at_ms=t).drain(0, offset, 1, offset,
                                                          at_ms=60_000 + offset)
    offset = len(times)
    h.write(2, 0, offset=offset, at_ms=41_000).drain(0, offset, 2, 0, at_ms=60_000 + offset)
    if cut == "client":
        h.event("partition", START, 5_000, targets=[1, 2, 3], shape="client", target="all",
                began_ns=BASE_NS + 4_900 * MS)
        h.event("partition", END, 8_000, targets=[1, 2, 3], shape="client")
    else:
        h.event("kill", START, 5_000, targets=[1])
        h.event("kill", END, 8_000, targets=[1])
    for kind, start, end in more:
        h.event(kind, START, start, targets=[1])
        h.event(kind, END, end, targets=[1])
    for ms in (6_000, *early):
        h.event(CLIENT_ERROR, at_ms=ms, client="p2", name="_ALL_BROKERS_DOWN",
                reason="3/3 brokers are down")
    for s in range(first_s, last_s + 1):
        h.event(CLIENT_ERROR, at_ms=s * 1000 + 300, client="p2", name="_ALL_BROKERS_DOWN",
                reason="3/3 brokers are down")
    h.event(PHASE, START, 40_000, name=LIVENESS_PHASE, bound_s=10, slack_s=5)
    h.event(PHASE, END, 50_000, name=LIVENESS_PHASE, progressed={})
    h.event(PHASE, END, 50_100, name="workload",
            producers={"p1": {"exitcode": 0}, "p2": {"exitcode": 0}})
    h.drain_end(end_offsets={"t:0": offset + 1}, at_ms=61_000)
    h.event(CONSUMERS_STOPPED, at_ms=62_000, consumers={})
    return h


def _entry(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = res["anomalies"][KIND]
    return out


def test_an_idle_producer_still_down_past_the_bound_names_5088(check) -> None:  # type: ignore[no-untyped-def]
    res = check(_history())
    e = _entry(res)
    assert e["count"] == 1 and not e["allowed"] and e["known_bugs"] == {LOOP: 1}
    ex = e["examples"][0]
    # 18.3 s to 35.3 s: the reports from the bound (10 s) after the cut's end (8 s) on
    assert ex["client"] == "p2" and ex["reports"] == 18
    assert ex["known_bug"]["id"] == LOOP
    assert res["valid"] is False
    # accepted: the run's only violation is explained, still counted
    h = _history()
    h.run["accept_known"] = [LOOP]
    res = check(h)
    assert _entry(res)["accepted"] == 1 and res["valid"] is True
    # the fixed release: the same client is a plain violation
    e = _entry(check(_history(librdkafka="2.10.1")))
    assert e["count"] == 1 and e["known_bugs"] == {}


def test_reports_within_the_bound_or_under_a_fault_count_nothing(check) -> None:  # type: ignore[no-untyped-def]
    # the last report 17.3 s, within the bound after the heal: reconnected in time
    res = check(_history(last_s=17))
    assert _entry(res)["count"] == 0 and "checked" not in _entry(res)
    assert res["valid"] is True
    # a pause of broker 1 from 20 s to 22 s: the reports from 20 s to 32 s (the bound
    # after it) are not counted, 18.3, 19.3 and 32.3-35.3 s are
    e = _entry(check(_history(more=[("pause", 20_000, 22_000)])))
    assert e["count"] == 1 and e["examples"][0]["reports"] == 6
    # reports before any fault (0.5 s: no heal to reconnect after) and in the cut before its
    # start event was written (4.95 s: begun at 4.9 s) are not counted, and not unknown
    res = check(_history(early=(500, 4_950)))
    assert _entry(res)["examples"][0]["reports"] == 18 and res["valid"] is False
    assert not res.get("unknown_reasons")
    # the same loop after a kill of one broker, not a cut of every broker: counted, named
    # nothing (the bug's loop begins when the client sees every broker down in the cut)
    e = _entry(check(_history(cut="kill")))
    assert e["count"] == 1 and e["known_bugs"] == {}


def test_without_a_witness_the_run_cannot_tell(check) -> None:  # type: ignore[no-untyped-def]
    # p1 acknowledged nothing after 15 s (until the phase): no report past the bound is
    # shown to have come while the brokers served: not counted, unknown
    res = check(_history(p1_until_s=15))
    assert _entry(res)["count"] == 0
    assert res["valid"] == "unknown"
    assert any("p2 reported every broker down" in r and "not shown" in r
               for r in res["unknown_reasons"])
    # a client whose producers record no such reports: not checked
    res = check(_history(client="java"))
    assert _entry(res)["checked"] is False and "do not record" in _entry(res)["reason"]
