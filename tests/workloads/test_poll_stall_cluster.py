"""A poll-stall on a real KIP-848 consumer (confluent-kafka 2.15.0, where librdkafka#5541 is
fixed): its loop stops calling consume() past max.poll.interval.ms, the fault's events say
when it last polled, the client reports the expired interval when it polls again, and it
rejoins and reads on. The affected side is the catalogue's (tests/bugs/test_bug_runs.py and
``kafka-chaos run --bug librdkafka#5541``)."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cluster import KafkaCluster
from contract.events import CONSUMER_ERROR, REBALANCE
from contract.faults import POLL_STALL
from contract.liveness import read_slot
from nemesis.faults.base import FaultContext
from nemesis.faults.stall import PollStall
from nemesis.schedule import Nemesis
from runner.clients import ensure_client
from tests.workloads.conftest import read_table
from workloads import (
    ConsumerConfig,
    ConsumerSpec,
    EventLog,
    ProducerConfig,
    start_consumers,
    start_producers,
)
from workloads.history import history_dir

pytestmark = pytest.mark.cluster

INTERVAL_MS = 4000
STALL_S = 6.0  # past the interval by 2 s


def _progress_after(slot: Any, ts_ns: int, timeout_s: float) -> int:
    """The consumer's first progress stamp after ``ts_ns``, polled for up to ``timeout_s``."""
    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                            reraise=True):
        with attempt:
            at = read_slot(slot)[1]
            assert at > ts_ns, f"no read since {ts_ns}"
    return at


def _assigned_after(path: Path, ts_ns: int, timeout_s: float) -> int:
    """When c0 was next assigned a partition after ``ts_ns`` (its rejoin), polled."""
    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                            reraise=True):
        with attempt:
            at = [e["ts_ns"] for e in map(json.loads, path.read_text().splitlines())
                  if e["kind"] == REBALANCE and e["detail"]["reader"] == "c0"
                  and e["detail"]["what"] == "assigned" and e["detail"]["partitions"]
                  and e["ts_ns"] > ts_ns]
            assert at, f"c0 not assigned again since {ts_ns}"
    return min(at)


def test_a_stalled_kip848_consumer_is_recorded_and_rejoins_on_the_fixed_client(
        cluster: KafkaCluster, tmp_path: Path) -> None:
    interp = ensure_client("2.15.0")
    topic = f"t-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    boot = cluster.bootstrap_servers
    ccfg = ConsumerConfig(group_id=f"g-{topic}", group_protocol="consumer",
                          history_flush_interval_s=0.5,
                          extra={"max.poll.interval.ms": str(INTERVAL_MS)})
    consumers = start_consumers(tmp_path, boot, topic, 1, ccfg,
                                [ConsumerSpec("c0", "subscribe")], interpreter=interp)
    producers = start_producers(tmp_path, boot, topic, 1, ProducerConfig(rate=50, duration_s=90),
                                1, stop_event=consumers.stop_event, interpreter=interp)
    slot = consumers.slots["c0"]
    events = EventLog(history_dir(tmp_path) / "events.jsonl")
    nemesis = Nemesis(FaultContext(cluster, events, topic, random.Random(0),
                                   consumers=lambda: dict(consumers.slots)))
    try:
        _progress_after(slot, 0, 60)  # joined (KIP-848) and reading
        fault = nemesis.start_fault(PollStall("c0"))
        nemesis.wait(STALL_S)
        nemesis.end_fault(fault)
        stall = [json.loads(line) for line in events.path.read_text().splitlines()
                 if json.loads(line)["kind"] == POLL_STALL]
        end_ns = stall[-1]["ts_ns"]
        # the fixed client left the group, rejoined on its next poll (its partition assigned
        # anew) and reads again after that (not only what it had fetched before)
        assigned = _assigned_after(events.path, end_ns, 45)
        resumed = _progress_after(slot, assigned, 45)
    finally:
        nemesis.heal_all()
        pstats = producers.stop(20)
        cstats = consumers.stop(20)
    assert all(s["exitcode"] == 0 for s in (*pstats.values(), *cstats.values()))
    assert cstats["c0"]["stalls"] == 1 and cstats["c0"]["fatal_errors"] == 0
    start, end = stall
    assert (start["phase"], end["phase"], start["targets"]) == ("start", "end", ["c0"])
    since = start["detail"]["stalled_since_ns"]["c0"]
    assert since <= start["ts_ns"] and end["ts_ns"] - since > INTERVAL_MS * 1_000_000
    # no read of c0 inside the stall: its loop did not poll (the last batch's reads are
    # stamped as they are recorded, after that consume() returned but before the loop
    # answered the request, so before the start event)
    reads = [r for r in read_table(tmp_path, "reads").to_pylist() if r["reader"] == "c0"]
    assert not [r for r in reads if start["ts_ns"] < r["read_ns"] < end["ts_ns"]]
    # read again after its new assignment: the consumer stamps its progress once a poll's
    # reads are recorded, so those reads lie between the assignment and that stamp
    assert any(assigned <= r["read_ns"] <= resumed for r in reads)
    # the client's own word that the interval expired, recorded as it polled again
    errors = [json.loads(line) for line in events.path.read_text().splitlines()
              if json.loads(line)["kind"] == CONSUMER_ERROR]
    after = end["ts_ns"]
    print(f"assigned {(assigned - after) / 1e9:.1f} s, read {(resumed - after) / 1e9:.1f} s "
          f"after the stall; errors {errors}")
    assert [e["detail"]["name"] for e in errors] == ["_MAX_POLL_EXCEEDED"]
    assert errors[0]["ts_ns"] >= end["ts_ns"] and errors[0]["detail"]["fatal"] is False
