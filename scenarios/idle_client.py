"""idle-producer-all-brokers-down (librdkafka#5088): an idle producer's client sees every
broker down, and must be connected again within the liveness bound after the heal, though
it has nothing to send (checkers/reconnect.py judges it: down-after-heal).

librdkafka 2.10.0 re-bootstraps when every broker is down and prefers brokers it never
connected to, so after the heal it connects a bootstrap broker; the first metadata response
removes the bootstrap brokers again, which counts as every broker down, and it starts over,
about once a second. A client with anything to send or fetch reconnects a learned broker on
its own and leaves the loop, so only an idle one stays in it: here a producer that has sent
nothing yet (it knows no topic). Its loop starts only if the heal leaves it a bootstrap broker
it has not tried since the last re-bootstrap: it tries one about every second, so the heal
comes 0.7 s after its first report of every broker down, and the cut answers with TCP resets
(a connect fails at once, not after a timeout).
"""

from __future__ import annotations

import time
from typing import Any

from contract.events import CLIENT_ERROR, parse_events
from nemesis.faults.base import FaultContext
from nemesis.faults.network import Partition
from scenarios.base import Expect, Scenario
from scenarios.script_steps import Condition, wait_until

#: The idle producer (the run's last, option ``idle_producer``).
IDLE = "p1"
#: How long after the idle producer's first report of every broker down the cut heals:
#: under the second its client takes to try the next bootstrap broker.
HEAL_AFTER_S = 0.7
#: How long the idle producer stays idle: the cut begins 8 s in and heals about 2-3 s later;
#: past the 15 s bound it has 30 s more in which a client still looping reports.
IDLE_S = 55.0


def reported_all_down(client: str, since_ns: int) -> Condition:
    """``client`` reported every broker down (a ``client-error`` event) after ``since_ns``."""
    def check(ctx: FaultContext) -> bool:
        try:
            text = ctx.events.path.read_text(encoding="utf-8")
        except OSError:
            return False
        events, _ = parse_events(text)
        return any(e.kind == CLIENT_ERROR and e.ts_ns > since_ns
                   and e.detail.get("client") == client for e in events)
    return check


def idle_all_brokers_down_script(nem: Any) -> None:
    """Cut the client host from every broker with resets; heal HEAL_AFTER_S after the idle
    producer reported every broker down (within 20 s: else heal, and the run says so).
    The script then lasts until the idle producer writes (IDLE_S, and 5 s), so the liveness
    phase that follows it asks it for acknowledgements only once it has records to send."""
    nem.wait(8)
    since = time.time_ns()
    cut = nem.start_fault(Partition("client", "all", reset=True))
    if wait_until(nem, reported_all_down(IDLE, since), 20, f"{IDLE} reported every broker "
                  "down", every_s=0.1):
        nem.wait(HEAL_AFTER_S)
    nem.end_fault(cut)
    nem.wait(IDLE_S + 5 - (time.monotonic() - nem.began))


#: The idle producer connected again within the bound, as every other client.
RECONNECTS: Expect = {"valid": True, "anomalies": {
    "down-after-heal": "==0", "stuck-producer": "==0", "stuck-consumer": "==0",
    "hung-call": "==0"}}

IDLE_PRODUCER_ALL_BROKERS_DOWN = Scenario(
    name="idle-producer-all-brokers-down",
    summary="an idle producer's client host cut from every broker (TCP resets), healed "
            "0.7 s after it reported all brokers down: it must reconnect within the bound "
            "though it sends nothing (librdkafka#5088: 2.10.0 loops re-bootstrapping)",
    doc=(
        "Two producers (not idempotent) and a consumer; the second producer stays idle for "
        "its first 55 s (its client connected, nothing sent), and the script waits for it "
        "to write before the liveness phase begins. 8 s in, the client host is cut from every "
        "broker, each answering its packets with a TCP reset and closing the connections "
        "it had, so every client sees all brokers down at once; 0.7 s after the idle "
        "producer reported it, the cut heals. From the end of the 15 s liveness bound "
        "after the heal, a producer that still reports every broker down while the other "
        "producer is acknowledged is a down-after-heal. librdkafka 2.10.0 keeps choosing "
        "its bootstrap brokers and removing them again, re-bootstrapping about once a "
        "second for as long as it has nothing to send (librdkafka#5088, fixed in 2.10.1)."
    ),
    # not idempotent: an idempotent producer asks a broker for its producer id whenever it
    # has none, work that an idle client would otherwise not have (duplicates of the busy
    # producer's retries are allowed without idempotence)
    config={"acks": "all", "idempotence": False, "faults": [], "duration": 75.0,
            "producers": 2, "idle_producer": IDLE_S, "consumers": 1, "rate": 50.0,
            "liveness": 15.0},
    script=idle_all_brokers_down_script,
    script_faults=("partition",),
    settle_s=2.0,
    expect=RECONNECTS,
    mechanism=[{"kind": "fault", "fault": "partition"}],
)

SCENARIOS: list[Scenario] = [IDLE_PRODUCER_ALL_BROKERS_DOWN]
