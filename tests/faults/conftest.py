"""One 3-broker cluster (and a dedicated controller) for this package's fault tests, with
settings that make faults bite within seconds; each test gets a fresh topic and finds
every broker up.

A dedicated controller keeps the quorum reachable whatever a test does to the brokers (the
network shapes cut brokers from each other, not from the controller). A test heals what it
did; the ``cluster`` fixture restarts or resumes a broker a failed test left down, so the
next test starts from a whole cluster. Nothing is left at the end: tests/hygiene.py checks.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from confluent_kafka import Producer
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cluster import KafkaCluster
from compose.config import FAST_FAULTS, ClusterConfig
from contract.events import EventLog
from nemesis.faults.base import FaultContext
from tests.hygiene import share


# Package scope: the cluster is gone once the fault tests are done, instead of idling
# (four JVMs) through the rest of the suite on a 2-core machine.
@pytest.fixture(scope="package")
def fault_cluster(docker_client: docker.DockerClient) -> Iterator[KafkaCluster]:
    cfg = ClusterConfig(brokers=3, controllers=1, broker_config=dict(FAST_FAULTS))
    with KafkaCluster(cfg) as c:
        share(c.name)
        yield c


def whole(cluster: KafkaCluster) -> None:
    """Every node running (a paused one resumed, a stopped one started), brokers registered."""
    for node in cluster.nodes.values():
        status = node.status()
        if status == "paused":
            node.unpause()
        elif status != "running":
            node.start()
    cluster.wait_brokers(cluster.cfg.broker_ids, timeout_s=120)


@pytest.fixture
def cluster(fault_cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    whole(fault_cluster)
    yield fault_cluster
    whole(fault_cluster)


@pytest.fixture
def topic(cluster: KafkaCluster) -> str:
    """A fresh single-partition topic, RF 3, min.insync.replicas 2."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3,
                         config={"min.insync.replicas": "2"})
    return name


@pytest.fixture
def ctx(cluster: KafkaCluster, topic: str, tmp_path: Path) -> Iterator[FaultContext]:
    events = EventLog(tmp_path / "history" / "events.jsonl")
    yield FaultContext(cluster, events, topic, random.Random(7))
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
