"""A fresh 3-broker cluster per test, with settings that make faults bite within seconds."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from confluent_kafka import Producer
from tenacity import Retrying, stop_after_delay, wait_fixed

from chaos.faults.base import FaultContext
from compose.cluster import KafkaCluster
from compose.config import FAST_FAULTS, ClusterConfig
from workloads.history import EventLog

TOPIC = "t"


@pytest.fixture
def cluster(docker_client: docker.DockerClient) -> Iterator[KafkaCluster]:
    """(Nothing left afterwards: tests/hygiene.py's ``no_leaks`` checks.)"""
    cfg = ClusterConfig(brokers=3, broker_config=dict(FAST_FAULTS))
    with KafkaCluster(cfg) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=3,
                       config={"min.insync.replicas": "2"})
        yield c


@pytest.fixture
def ctx(cluster: KafkaCluster, tmp_path: Path) -> Iterator[FaultContext]:
    events = EventLog(tmp_path / "history" / "events.jsonl")
    yield FaultContext(cluster, events, TOPIC, random.Random(7))
    events.close()


Result = list[tuple[str | None, int | None, float]]


def produce(bootstrap: str, topic: str, n: int, partition: int = 0,
            timeout_s: float = 30, size: int = 0, **conf: str) -> Result:
    """Produces ``n`` small records; returns (error name, offset, latency s) per record."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": int(timeout_s * 1000), "log_level": 2, **conf})
    out: list[tuple[str | None, int | None, float]] = []

    def cb(err, msg) -> None:  # noqa: ANN001 - librdkafka callback
        out.append((err.name() if err else None, msg.offset(), msg.latency() or 0.0))

    for i in range(n):
        p.produce(topic, value=(b"v%d" % i).ljust(size, b"."), partition=partition,
                  on_delivery=cb)
        p.poll(0)
    p.flush(timeout_s + 5)
    return out


def end_offset(cluster: KafkaCluster, topic: str, partition: int = 0) -> int:
    return cluster.end_offsets(topic)[partition]


def until(timeout_s: float, check, what: str) -> None:  # noqa: ANN001
    """Polls ``check`` every 0.25 s until it holds; fails with ``what`` after the bound."""
    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.25),
                            reraise=True):
        with attempt:
            assert check(), what
