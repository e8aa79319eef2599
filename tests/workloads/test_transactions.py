"""Transactional producers: committed and aborted transactions, read_committed readers."""

from __future__ import annotations

from pathlib import Path

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cluster import KafkaCluster
from tests.workloads.conftest import read_table
from tests.workloads.helpers import rows, wait_finished
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


def test_committed_and_aborted(cluster: KafkaCluster, topic: str, tmp_path: Path) -> None:
    boot = cluster.bootstrap_servers
    consumers = start_consumers(
        tmp_path, boot, topic, 3,
        ConsumerConfig(isolation_level="read_committed", history_flush_interval_s=0.5),
        [ConsumerSpec("c0", "assign")])
    try:
        cfg = ProducerConfig(transactional=True, records_per_txn=5, abort_share=0.4,
                             rate=200, duration_s=6, seed=7,
                             transactional_id_prefix=f"txn-{topic}")
        producers = start_producers(tmp_path, boot, topic, 3, cfg, count=2)
        wait_finished(producers, 90)
        stats = producers.stop(5)
        writes = rows(read_table(tmp_path, "writes"))
        committed = {(w["producer"], w["seq"]) for w in writes
                     if w["txn_outcome"] == "committed"}
        # Wait until the read_committed consumer has caught up with every committed write.
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.5), reraise=True):
            with attempt:
                got = {(r["producer"], r["seq"]) for r in rows(read_table(tmp_path, "reads"))}
                assert committed <= got
    finally:
        consumers.stop(10)

    assert all(s["exitcode"] == 0 for s in stats.values())
    assert {w["txn_outcome"] for w in writes} == {"committed", "aborted"}
    assert all(w["txn"] is not None and w["txn"].startswith(f"txn-{topic}-") for w in writes)
    # One transaction, one outcome; all of a committed transaction's writes were acked.
    by_txn: dict[str, set[str]] = {}
    for w in writes:
        by_txn.setdefault(w["txn"], set()).add(w["txn_outcome"])
        if w["txn_outcome"] == "committed":
            assert w["outcome"] == "ok"
    assert all(len(v) == 1 for v in by_txn.values())
    assert sum(s["txn_aborted"] for s in stats.values()) > 0
    aborted = {(w["producer"], w["seq"]) for w in writes if w["txn_outcome"] == "aborted"}
    reads = rows(read_table(tmp_path, "reads"))
    read_ids = {(r["producer"], r["seq"]) for r in reads}
    assert not (read_ids & aborted), "read_committed consumer saw aborted records"
    assert read_ids == committed

    # The drain reaches end offsets that lie past trailing transaction markers (positions,
    # not counts), in both isolation levels; a second drain adds parts, overwrites none.
    events = EventLog(history_dir(tmp_path) / "events.jsonl")
    try:
        unc = drain(tmp_path, boot, topic, 3, events, timeout_s=60)
        com = drain(tmp_path, boot, topic, 3, events, timeout_s=60,
                    isolation_level="read_committed")
    finally:
        events.close()
    assert unc.complete and com.complete
    assert unc.end_offsets == com.end_offsets  # no open transaction: LSO == HW
    assert unc.records > com.records == len(committed)
    drained = [r for r in rows(read_table(tmp_path, "reads")) if r["reader"] == "drain"]
    assert len(drained) == unc.records + com.records
    acked = {(w["producer"], w["seq"]) for w in writes if w["outcome"] == "ok"}
    assert {(r["producer"], r["seq"]) for r in drained} == acked
