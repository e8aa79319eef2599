"""Consumers during the run and the final drain read everything that was acknowledged."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from compose.cluster import KafkaCluster
from tests.workloads.conftest import read_table
from tests.workloads.helpers import (
    READS_CONTRACT,
    acked_identities,
    rows,
    wait_finished,
    wait_read,
)
from workloads import (
    ConsumerConfig,
    ConsumerSpec,
    EventLog,
    ProducerConfig,
    drain,
    start_consumers,
    start_producers,
)
from workloads.history import history_dir

pytestmark = pytest.mark.cluster


def test_consumers_and_drain_read_all_acked(cluster: KafkaCluster, topic: str,
                                            tmp_path: Path) -> None:
    boot = cluster.bootstrap_servers
    ccfg = ConsumerConfig(group_id=f"g-{topic}", history_flush_interval_s=0.5)
    consumers = start_consumers(tmp_path, boot, topic, 3, ccfg,
                                [ConsumerSpec("c0", "assign"), ConsumerSpec("c1", "subscribe"),
                                 ConsumerSpec("c2", "assign", partitions=[2])])
    try:
        producers = start_producers(tmp_path, boot, topic, 3,
                                    ProducerConfig(rate=300, duration_s=4), count=2)
        wait_finished(producers)
        producers.stop(5)
        acked_now = acked_identities(rows(read_table(tmp_path, "writes")))
        # Live consumers are stopped only once each has read what it should have read: a
        # subscribe-mode consumer joins its group on its own clock (coordinator lookup, join,
        # sync, offset fetch), and on a loaded machine that can end after the producers do.
        # Stopping it then cut it off after its first batch (CI: c1 read 500 = one
        # max_poll_records batch of 2,206) while c0 and the drain read everything.
        wants = {"c0": set(acked_now), "c1": set(acked_now),
                 "c2": {k for k, v in acked_now.items() if v[0] == 2}}
        wait_read(tmp_path, wants, timeout_s=90)
    finally:
        cstats = consumers.stop(20)
    assert all(s["exitcode"] == 0 for s in cstats.values()), cstats

    events = EventLog(history_dir(tmp_path) / "events.jsonl")
    result = drain(tmp_path, boot, topic, 3, events, timeout_s=60)
    events.close()

    writes = rows(read_table(tmp_path, "writes"))
    reads_t = read_table(tmp_path, "reads")
    assert [(f.name, f.type) for f in reads_t.schema] == READS_CONTRACT
    reads = rows(reads_t)
    acked = acked_identities(writes)
    assert acked
    assert acked == acked_now  # nothing was acknowledged after the producers stopped

    def seen(reader: str) -> dict[tuple[int, int], tuple[int, int]]:
        return {(r["producer"], r["seq"]): (r["partition"], r["offset"])
                for r in reads if r["reader"] == reader}

    assert all(r["valid"] for r in reads)
    # each poll's records numbered 0, 1, ... in the order its consume() returned them
    places: dict[tuple[str, int], list[int]] = {}
    for r in reads:
        places.setdefault((r["reader"], r["poll"]), []).append(r["poll_index"])
    assert places and all(sorted(v) == list(range(len(v))) for v in places.values())
    assert any(len(v) > 1 for v in places.values())
    assert seen("drain") == acked
    assert seen("c0") == acked
    # The subscribed consumer joined its group while producing went on; from earliest it
    # sees every record, and exactly once per identity at the acknowledged offset.
    assert seen("c1") == acked
    assert seen("c2") == {k: v for k, v in acked.items() if v[0] == 2}
    assert {r["mode"] for r in reads if r["reader"] == "drain"} == {"drain"}
    assert {r["mode"] for r in reads if r["reader"] == "c1"} == {"subscribe"}
    # Poll numbers only grow along a reader's reads of one partition.
    for reader in ("c0", "c1", "drain"):
        for p in range(3):
            mine = [r for r in reads if r["reader"] == reader and r["partition"] == p]
            assert all(a["poll"] <= b["poll"] and a["offset"] < b["offset"]
                       for a, b in pairwise(mine))

    # The drain's end offsets are the partitions' end offsets.
    admin = cluster.admin()
    futs = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(3)})
    latest = {f"{topic}:{tp.partition}": f.result().offset for tp, f in futs.items()}
    assert result.complete
    assert result.end_offsets == latest
    assert result.records == len(acked)
    lines = [json.loads(x) for x in (history_dir(tmp_path) / "events.jsonl").read_text()
             .splitlines()]
    phases = [e for e in lines if e["kind"] == "phase"]
    assert [(e["phase"], e["detail"]["name"]) for e in phases] == [("start", "drain"),
                                                                   ("end", "drain")]
    end = phases[1]["detail"]
    assert end["complete"] is True
    assert end["end_offsets"] == latest
    # The subscribed consumer's rebalances are events too.
    assert any(e["kind"] == "rebalance" and e["detail"]["reader"] == "c1" for e in lines)
