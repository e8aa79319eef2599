"""Network faults proven through Kafka itself. Dedicated controllers, so cutting brokers from
each other leaves every broker reachable by the controller (as the shapes intend)."""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from confluent_kafka import Producer

from chaos.faults.base import FaultContext
from chaos.faults.network import Partition, Slow
from chaos.net import sweep
from compose.cluster import KafkaCluster
from compose.config import FAST_FAULTS, ClusterConfig
from tests.faults.conftest import TOPIC, produce, until
from workloads.history import EventLog


@pytest.fixture
def dcluster(docker_client: docker.DockerClient) -> Iterator[KafkaCluster]:
    cfg = ClusterConfig(brokers=3, controllers=1, broker_config=dict(FAST_FAULTS))
    with KafkaCluster(cfg) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=3,
                       config={"min.insync.replicas": "2"})
        yield c


@pytest.fixture
def dctx(dcluster: KafkaCluster, tmp_path: Path) -> Iterator[FaultContext]:
    events = EventLog(tmp_path / "events.jsonl")
    ctx = FaultContext(dcluster, events, TOPIC, random.Random(3))
    yield ctx
    events.close()


def our_rules_left(cluster: KafkaCluster) -> int:
    from chaos.faults.network import cluster_nodes

    reports = [sweep(n.ns) for n in cluster_nodes(
        FaultContext(cluster, None, TOPIC), with_client=False) if n.ns]  # type: ignore[arg-type]
    return sum(r.rules + len(r.qdiscs) + len(r.delayers) for r in reports)


def isr_after_traffic(cluster: KafkaCluster) -> tuple[int, ...]:
    """Produces a few acks=1 records, then reads the ISR. A follower that cannot fetch stays
    "caught up" while the leader's log does not grow, so shrinking needs traffic."""
    produce(cluster.bootstrap_servers, TOPIC, 5, timeout_s=5, acks="1")
    return cluster.describe(TOPIC)[0].isr


def test_leader_cut_from_followers_rejects_acks_all_and_shrinks_isr(dcluster, dctx):
    leader = dcluster.describe(TOPIC)[0].leader
    fault = Partition("leader-followers")
    fault.start(dctx)
    assert fault.targets == [leader]
    until(40, lambda: isr_after_traffic(dcluster) == (leader,),
          "ISR did not shrink to the leader alone")
    # retries=0: librdkafka would otherwise retry NOT_ENOUGH_REPLICAS until it times out.
    results = produce(dcluster.bootstrap_servers, TOPIC, 20, timeout_s=10, retries="0")
    errors = {err for err, _, _ in results}
    assert "NOT_ENOUGH_REPLICAS" in errors, errors
    fault.stop(dctx)
    until(40, lambda: len(dcluster.describe(TOPIC)[0].isr) == 3, "ISR did not re-expand")
    assert all(err is None for err, _, _ in produce(dcluster.bootstrap_servers, TOPIC, 20))
    assert our_rules_left(dcluster) == 0


def test_one_way_partition_is_one_way(dcluster, dctx):
    state = dcluster.describe(TOPIC)[0]
    follower = next(r for r in state.replicas if r != state.leader)
    # The leader cannot open connections to the follower: followers fetch over connections
    # they open themselves, so replication goes on and the follower stays in the ISR.
    out = Partition("one-way", target=str(state.leader), peer=str(follower))
    out.start(dctx)
    assert all(err is None for err, _, _ in produce(dcluster.bootstrap_servers, TOPIC, 50))
    assert follower in dcluster.describe(TOPIC)[0].isr
    out.stop(dctx)
    # The follower cannot open connections to the leader: its fetches stop, it leaves the ISR.
    back = Partition("one-way", target=str(follower), peer=str(state.leader))
    back.start(dctx)
    until(40, lambda: follower not in isr_after_traffic(dcluster),
          "follower that cannot reach the leader stayed in the ISR")
    back.stop(dctx)
    until(40, lambda: follower in dcluster.describe(TOPIC)[0].isr, "follower did not rejoin")


def sequential_latencies(bootstrap: str, n: int) -> list[float]:
    """Acks=all latency of ``n`` records sent one at a time on a warmed-up producer."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "log_level": 2})
    lat: list[float] = []

    def cb(err, msg) -> None:  # noqa: ANN001
        assert err is None, err
        lat.append(msg.latency())

    for _i in range(n + 3):
        p.produce(TOPIC, value=b"x", partition=0, on_delivery=cb)
        assert p.flush(20) == 0
    return lat[3:]  # the first ones pay for connection set-up and metadata


def test_delay_on_leader_link_raises_acks_all_latency(dcluster, dctx):
    base = statistics.median(sequential_latencies(dcluster.bootstrap_servers, 15))
    slow = Slow("leader:0", delay_ms=300)
    slow.start(dctx)
    try:
        delayed = statistics.median(sequential_latencies(dcluster.bootstrap_servers, 15))
    finally:
        slow.stop(dctx)
    added = delayed - base
    # The followers' fetches reach the leader 300 ms late: one replication round trip more.
    assert 0.2 <= added <= 0.9, f"added latency {added:.3f}s for a 0.3 s delay (base {base:.3f})"
    assert our_rules_left(dcluster) == 0


def test_bandwidth_limit_makes_follower_fall_behind(dcluster, dctx):
    slow = Slow("follower:0", rate_kbit=100)
    slow.start(dctx)
    (follower,) = slow.targets
    try:
        # 2 MB at 100 kbit/s takes minutes to replicate; the follower must drop out of the ISR.
        res = produce(dcluster.bootstrap_servers, TOPIC, 400, timeout_s=30, size=5000,
                      acks="1")
        assert sum(err is None for err, _, _ in res) > 0
        until(40, lambda: follower not in dcluster.describe(TOPIC)[0].isr,
              "rate-limited follower stayed in the ISR")
    finally:
        slow.stop(dctx)
    until(60, lambda: follower in dcluster.describe(TOPIC)[0].isr, "follower did not catch up")
