"""Network faults proven through Kafka itself, on the fault tests' shared cluster (its
dedicated controller stays reachable by every broker when brokers are cut from each other,
as the shapes intend)."""

from __future__ import annotations

import statistics

from confluent_kafka import Producer

from compose.cluster import KafkaCluster
from nemesis.faults.base import FaultContext
from nemesis.faults.hold import Hold
from nemesis.faults.network import Partition, Slow
from nemesis.net import sweep
from tests.faults.conftest import end_offset, produce, until


def our_rules_left(ctx: FaultContext) -> int:
    from nemesis.faults.network import cluster_nodes

    reports = [sweep(n.ns) for n in cluster_nodes(ctx, with_client=False) if n.ns]
    return sum(r.rules + len(r.qdiscs) + len(r.delayers) for r in reports)


def isr_after_traffic(cluster: KafkaCluster, topic: str) -> tuple[int, ...]:
    """Produces a few acks=1 records, then reads the ISR. A follower that cannot fetch stays
    "caught up" while the leader's log does not grow, so shrinking needs traffic."""
    produce(cluster.bootstrap_servers, topic, 5, timeout_s=5, acks="1")
    return cluster.describe(topic)[0].isr


def test_leader_cut_from_followers_rejects_acks_all_and_shrinks_isr(cluster, ctx):
    leader = cluster.describe(ctx.topic)[0].leader
    fault = Partition("leader-followers")
    fault.start(ctx)
    assert fault.targets == [leader]
    until(40, lambda: isr_after_traffic(cluster, ctx.topic) == (leader,),
          "ISR did not shrink to the leader alone")
    # retries=0: librdkafka would otherwise retry NOT_ENOUGH_REPLICAS until it times out.
    results = produce(cluster.bootstrap_servers, ctx.topic, 20, timeout_s=10, retries="0")
    errors = {err for err, _, _ in results}
    assert "NOT_ENOUGH_REPLICAS" in errors, errors
    fault.stop(ctx)
    until(40, lambda: len(cluster.describe(ctx.topic)[0].isr) == 3, "ISR did not re-expand")
    assert all(err is None for err, _, _ in produce(cluster.bootstrap_servers, ctx.topic, 20))
    assert our_rules_left(ctx) == 0


def test_a_follower_drawn_for_leader_followers_is_cut_from_its_fellow_replicas(cluster, ctx):
    # A random schedule may draw this shape with a follower as the target; its cut used to
    # include the follower itself and the start failed (seen in a 5-broker run).
    state = cluster.describe(ctx.topic)[0]
    follower = next(r for r in state.replicas if r != state.leader)
    fault = Partition("leader-followers", target=str(follower))
    fault.start(ctx)
    assert fault.targets == [follower]
    until(40, lambda: follower not in isr_after_traffic(cluster, ctx.topic),
          "the cut follower stayed in the ISR")
    fault.stop(ctx)
    until(40, lambda: len(cluster.describe(ctx.topic)[0].isr) == 3, "ISR did not re-expand")
    assert our_rules_left(ctx) == 0


def test_one_way_partition_is_one_way(cluster, ctx):
    state = cluster.describe(ctx.topic)[0]
    follower = next(r for r in state.replicas if r != state.leader)
    # The leader cannot open connections to the follower: followers fetch over connections
    # they open themselves, so replication goes on and the follower stays in the ISR.
    out = Partition("one-way", target=str(state.leader), peer=str(follower))
    out.start(ctx)
    assert all(err is None for err, _, _ in produce(cluster.bootstrap_servers, ctx.topic, 50))
    assert follower in cluster.describe(ctx.topic)[0].isr
    out.stop(ctx)
    # The follower cannot open connections to the leader: its fetches stop, it leaves the ISR.
    back = Partition("one-way", target=str(follower), peer=str(state.leader))
    back.start(ctx)
    until(40, lambda: follower not in isr_after_traffic(cluster, ctx.topic),
          "follower that cannot reach the leader stayed in the ISR")
    back.stop(ctx)
    until(40, lambda: follower in cluster.describe(ctx.topic)[0].isr, "follower did not rejoin")


def sequential_latencies(bootstrap: str, topic: str, n: int) -> list[float]:
    """Acks=all latency of ``n`` records sent one at a time on a warmed-up producer."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "log_level": 2})
    lat: list[float] = []

    def cb(err, msg) -> None:  # noqa: ANN001
        assert err is None, err
        lat.append(msg.latency())

    for _i in range(n + 3):
        p.produce(topic, value=b"x", partition=0, on_delivery=cb)
        assert p.flush(20) == 0
    return lat[3:]  # the first ones pay for connection set-up and metadata


def test_delay_on_leader_link_raises_acks_all_latency(cluster, ctx):
    base = statistics.median(sequential_latencies(cluster.bootstrap_servers, ctx.topic, 15))
    slow = Slow("leader:0", delay_ms=300)
    slow.start(ctx)
    try:
        delayed = statistics.median(sequential_latencies(cluster.bootstrap_servers, ctx.topic, 15))
    finally:
        slow.stop(ctx)
    added = delayed - base
    # The followers' fetches reach the leader 300 ms late: one replication round trip more.
    assert 0.2 <= added <= 0.9, f"added latency {added:.3f}s for a 0.3 s delay (base {base:.3f})"
    assert our_rules_left(ctx) == 0


def test_bandwidth_limit_makes_follower_fall_behind(cluster, ctx):
    slow = Slow("follower:0", rate_kbit=100)
    slow.start(ctx)
    (follower,) = slow.targets
    try:
        # 2 MB at 100 kbit/s takes minutes to replicate; the follower must drop out of the ISR.
        res = produce(cluster.bootstrap_servers, ctx.topic, 400, timeout_s=30, size=5000,
                      acks="1")
        assert sum(err is None for err, _, _ in res) > 0
        until(40, lambda: follower not in cluster.describe(ctx.topic)[0].isr,
              "rate-limited follower stayed in the ISR")
    finally:
        slow.stop(ctx)
    until(60, lambda: follower in cluster.describe(ctx.topic)[0].isr, "follower did not catch up")


def test_hold_delivers_a_timed_out_request_after_its_retry(cluster, ctx):
    # Without idempotence the broker cannot drop the stale original: it is appended again
    # next to its retry, which is how KAFKA-17754's stale EndTxn gets to act.
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
            "enable.idempotence": False, "socket.timeout.ms": 2000, "log_level": 2}
    p = Producer(conf)
    acks: list[tuple[str | None, float]] = []

    def cb(err, msg) -> None:  # noqa: ANN001 - librdkafka callback
        acks.append((err.name() if err else None, msg.latency() or 0.0))

    p.produce(ctx.topic, b"warm", partition=0, on_delivery=cb)
    assert p.flush(30) == 0 and acks[-1][0] is None  # its connections are open now
    hold = Hold("leader:0", hold_s=8.0)
    hold.start(ctx)
    try:
        p.produce(ctx.topic, b"held", partition=0, on_delivery=cb)
        assert p.flush(30) == 0
    finally:
        hold.stop(ctx)  # releases what it still holds: the stale original
    err, latency = acks[-1]
    # timed out on the held connection (2 s), retried on a new one, which passed
    assert err is None and 2.0 <= latency < 8.0, acks
    until(20, lambda: end_offset(cluster, ctx.topic) == 3,
          "the held original never reached the broker after its retry")
    assert our_rules_left(ctx) == 0
