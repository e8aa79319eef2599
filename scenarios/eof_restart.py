"""eof-consumer-restart (librdkafka#4844): a group consumer with enable.partition.eof=true
restarts after catching up; on confluent-kafka 2.2.0-2.13.0 it resumes one record too far.
The catalogue entry (scenarios/bugs.py) pins it to both sides."""

from __future__ import annotations

from contract.events import REBALANCE, Event
from contract.known_bugs import BY_ID
from runner.config import RunConfig
from scenarios.base import Expect, Scenario, installed_client_version


def _eof_restart_expect(cfg: RunConfig, kafka_version: str) -> Expect:
    bug = BY_ID["librdkafka#4844"]
    version = cfg.client_version or installed_client_version()
    if bug.affects(version):
        return {"valid": False, "anomalies": {"poll-skip": ">0"}}
    return {"valid": True, "anomalies": {"poll-skip": "==0", "nonmonotonic-poll": "==0"}}


#: Restarts the eof-consumer-restart workload waits for before it may end early: the
#: mechanism needs one, and on the affected version every restart skipped (8 of 8); more make
#: the fixed side's "no skip" rest on more than one chance.
EOF_RESTARTS = 3


def eof_restarts_done(events: list[Event]) -> bool:
    """EOF_RESTARTS consumer restarts recorded, and a new consumer assigned after the last
    (it reads the next record within the scenario's settle time: that read shows a skip)."""
    restarts = 0
    assigned_since = False
    for e in events:
        if e.kind != REBALANCE:
            continue
        if e.detail.get("what") == "restart":
            restarts += 1
            assigned_since = False
        elif e.detail.get("what") == "assigned":
            assigned_since = True
    return restarts >= EOF_RESTARTS and assigned_since


EOF_CONSUMER_RESTART = Scenario(
    name="eof-consumer-restart",
    summary="librdkafka#4844: a group consumer with enable.partition.eof=true restarts after "
            "catching up; on 2.2.0-2.13.0 it resumes one record too far",
    doc=(
        "One partition, one slow producer (5 records/s: the consumer catches up between "
        "records, so librdkafka emits end-of-partition events), no faults. The consumer "
        "reads with Consumer.consume() (librdkafka's batch path) and "
        "enable.partition.eof=true, alone in its own group with auto-commit. Each time its "
        "last batch ended with the partition's end event and a few seconds have passed, it "
        "closes — committing its stored offsets — and a second later (the time a restart "
        "takes) a new consumer joins the same group, resuming at the committed offset. "
        "librdkafka 2.2.0 to 2.13.0 store last offset + 2 after the end event in the batch "
        "path (librdkafka#4844, fixed by PR #5213 in 2.13.2), so the new consumer skips the "
        "next record: a poll-skip of exactly one offset, which the drain reads. "
        "A restart may re-read (at least once) but must never skip. The workload ends 4 s "
        "after the third restart's new consumer is assigned (40 s at most)."
    ),
    config={"brokers": 1, "partitions": 1, "replication_factor": 1, "min_insync": 1,
            "acks": "all", "producers": 1, "rate": 5.0, "consumers": 1,
            "consumer_mode": "restart", "consumer_config": {"enable.partition.eof": "true"},
            "faults": [], "duration": 40.0},
    expect=_eof_restart_expect,
    # Without a restart a clean fixed side would prove nothing; one suffices, since on the
    # affected version every restart skipped (8 of 8). A restart needs the consumer to end a
    # batch at the partition's end: under load the first came 18 s after the assignment.
    mechanism=[{"kind": "consumer-restart", "count": 1}],
    # Restarts came every 4-12 s once the consumer had caught up (5-8 in a 40 s run): the run
    # ends 4 s after the third restart's new consumer is assigned (~15 records at 5/s),
    # instead of idling to the 40 s bound.
    done_when=eof_restarts_done,
    settle_s=4.0,
)
