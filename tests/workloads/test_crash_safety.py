"""A producer killed mid-run leaves readable history; SIGTERM still writes all of it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cluster import KafkaCluster
from tests.workloads.conftest import read_table
from tests.workloads.helpers import rows
from workloads import ProducerConfig, start_producers

pytestmark = pytest.mark.cluster


def _parts(run_dir: Path, producer: int) -> list[Path]:
    return sorted((run_dir / "history" / "writes.parquet").glob(f"part-p{producer}-*.parquet"))


def test_sigkill_leaves_readable_parts(cluster: KafkaCluster, topic: str,
                                       tmp_path: Path) -> None:
    cfg = ProducerConfig(rate=500, duration_s=60, history_flush_interval_s=0.3)
    group = start_producers(tmp_path, cluster.bootstrap_servers, topic, 3, cfg, count=2)
    try:
        for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.2), reraise=True):
            with attempt:
                assert len(_parts(tmp_path, 0)) >= 3
        pid = group.procs["p0"].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        # SIGTERM to the other one: it winds down and still writes every attempt.
        group.procs["p1"].terminate()
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.2), reraise=True):
            with attempt:
                assert not group.alive()
    finally:
        stats = group.stop(5)
    assert stats["p0"]["exitcode"] == -signal.SIGKILL
    assert stats["p1"]["exitcode"] == 0
    writes = rows(read_table(tmp_path, "writes"))
    p0 = sorted(w["seq"] for w in writes if w["producer"] == 0)
    p1 = sorted(w["seq"] for w in writes if w["producer"] == 1)
    assert p0 and p0 == sorted(set(p0))
    # SIGTERM: no attempt missing, every one resolved.
    assert p1 == list(range(len(p1)))
    assert stats["p1"]["attempts"] == len(p1)
    assert all(w["outcome"] is not None for w in writes)


def test_in_flight_at_the_end_is_purged_and_recorded(cluster: KafkaCluster, topic: str,
                                                    tmp_path: Path) -> None:
    """Brokers paused (TCP stays open, nothing answers): at the end the producer flushes for
    its bound, purges, and records every unanswered attempt as info (in flight) or fail
    (never sent) — no attempt is missing."""
    # The producer's end is the test's to choose: its duration outlasts every bound below
    # (it used to be 4 s, and on a loaded machine it ran out before the third pause landed,
    # so everything had been acknowledged and nothing was left in flight). The group's stop
    # flag ends it once every broker is paused, through the same flush + purge as a deadline.
    cfg = ProducerConfig(rate=300, duration_s=600, flush_timeout_s=1.0)
    group = start_producers(tmp_path, cluster.bootstrap_servers, topic, 3, cfg, count=1)
    paused: list[int] = []
    try:
        for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.1), reraise=True):
            with attempt:
                assert _parts(tmp_path, 0) or not group.alive()
        for nid in cluster.cfg.broker_ids:
            cluster.node(nid).pause()
            paused.append(nid)
        assert group.alive(), "the producer ended before every broker was paused"
        group.stop_event.set()
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.2), reraise=True):
            with attempt:
                assert not group.alive()
    finally:
        for nid in paused:
            cluster.node(nid).unpause()
        stats = group.stop(5)
        cluster.wait_brokers(cluster.cfg.broker_ids, timeout_s=120)
        cluster.wait_partitions(topic, timeout_s=120)
    assert stats["p0"]["exitcode"] == 0, stats
    writes = rows(read_table(tmp_path, "writes"))
    assert sorted(w["seq"] for w in writes) == list(range(stats["p0"]["attempts"]))
    unanswered = [w for w in writes if w["outcome"] != "ok"]
    assert unanswered, "pausing every broker left nothing in flight"
    for w in unanswered:
        assert (w["outcome"], w["error"]) in {("info", "_PURGE_INFLIGHT"),
                                              ("info", "_PURGE_QUEUE")}, w
        assert w["offset"] is None
