"""Copying the brokers' log directories out: the segments, not the preallocated indexes."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from compose.cluster import KafkaCluster

pytestmark = pytest.mark.cluster


def test_collect_copies_segments_without_preallocated_indexes(cluster: KafkaCluster, topic: str,
                                                               tmp_path: Path) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(300):
        p.produce(topic, value=b"x" * 100, partition=i % 3)
    assert p.flush(30) == 0
    cluster.collect(tmp_path, data=True)
    files = [f for f in (tmp_path / "data").rglob("*") if f.is_file()]
    mine = [f for f in files if f.parent.name.startswith(f"{topic}-")]
    # Every broker holds a replica of each of the 3 partitions: 9 partition directories with
    # a non-empty active segment each.
    segments = [f for f in mine if f.suffix == ".log"]
    assert len(segments) == 9
    assert all(f.stat().st_size > 300 // 3 * 100 for f in segments)
    # Kafka preallocates 10 MiB offset and time indexes per active segment; a copy made them
    # whole files (a full suite wrote 4.2 GB, most of it these). They are rebuilt by Kafka and
    # read by nobody here.
    assert not [f for f in files if f.suffix in (".index", ".timeindex")]
    assert sum(f.stat().st_size for f in files) < 20 * 1024 * 1024
