"""Process faults proven through Kafka itself: metadata and produce results."""

from __future__ import annotations

import json
import threading
import time

from nemesis.faults.power import PowerLoss
from nemesis.faults.process import Kill, Pause
from tests.faults.conftest import end_offset, produce, until


def events(ctx) -> list[dict]:  # noqa: ANN001
    return [json.loads(x) for x in ctx.events.path.read_text().splitlines()]


def test_kill_leader_moves_leadership_and_old_leader_rejoins_isr(cluster, ctx):
    old = cluster.describe(ctx.topic)[0].leader
    fault = Kill("leader:0")
    fault.start(ctx)
    assert fault.targets == [old]
    until(15, lambda: cluster.describe(ctx.topic)[0].leader not in (-1, old),
          "no new leader elected within 15 s")
    assert cluster.node(old).status() == "exited"
    fault.stop(ctx)
    until(30, lambda: old in cluster.describe(ctx.topic)[0].isr, "old leader did not rejoin ISR")
    kinds = [(e["kind"], e["phase"], e["targets"]) for e in events(ctx)]
    assert kinds == [("kill", "start", [old]), ("kill", "end", [old])]


def test_paused_follower_leaves_isr_and_rejoins_after_resume(cluster, ctx):
    fault = Pause("follower:0")
    fault.start(ctx)
    (follower,) = fault.targets
    assert cluster.node(follower).status() == "paused"
    until(20, lambda: follower not in cluster.describe(ctx.topic)[0].isr,
          "paused follower still in ISR after 20 s (replica.lag.time.max.ms=4 s)")
    fault.stop(ctx)
    fault.stop(ctx)  # idempotent
    until(30, lambda: follower in cluster.describe(ctx.topic)[0].isr,
          "resumed follower did not rejoin the ISR")


def test_power_loss_drops_the_unflushed_tail_but_kill_does_not(cluster, ctx):
    solo = f"{ctx.topic}-solo"
    cluster.create_topic(solo, partitions=1, replication_factor=1)
    (owner,) = cluster.describe(solo)[0].replicas
    sent = produce(cluster.bootstrap_servers, solo, 500)
    assert all(err is None for err, _, _ in sent)
    before_kill = end_offset(cluster, solo)
    assert before_kill == 500

    kill = Kill(str(owner))
    kill.start(ctx)
    kill.stop(ctx)
    cluster.wait_partitions(solo, timeout_s=60)
    assert end_offset(cluster, solo) == before_kill, "kill -9 alone must lose nothing"

    sent = produce(cluster.bootstrap_servers, solo, 500)
    assert all(err is None for err, _, _ in sent)
    before_power = end_offset(cluster, solo)
    assert before_power == 1000

    cluster.wait_partitions(ctx.topic, timeout_s=60)  # the fault records this topic's ISR
    power = PowerLoss(str(owner))
    power.start(ctx)
    power.stop(ctx)
    cluster.wait_partitions(solo, timeout_s=60)
    after = end_offset(cluster, solo)
    assert after < before_power, f"power loss kept the whole log ({after} records)"
    start = next(e for e in events(ctx) if e["kind"] == "power-loss" and e["phase"] == "start")
    assert start["detail"]["lost"][str(owner)][f"{solo}-0"]["removed_batches"] > 0
    full = sorted(cluster.describe(ctx.topic)[0].replicas)
    assert start["detail"]["isr_before"] == {f"{ctx.topic}:0": full}


def test_target_lookup_outlasts_brokers_that_stop_answering(cluster, ctx):
    # A fault's target is read from the metadata when it starts. On a CI machine the brokers
    # once answered no metadata request for over 5 s while no fault was active; two faults
    # of that run failed on "Broker transport failure" (the request timed out after
    # socket.timeout.ms) and the run had too few faults. Every broker stalls here for 7 s,
    # longer than one request may take: the look-up must ask again, not give up.
    admin = cluster.admin()  # socket.timeout.ms 5000
    admin.list_topics(timeout=10)  # connected before the stall
    brokers = [cluster.node(i) for i in sorted(cluster.brokers)]
    for node in brokers:
        node.pause()
    thaw = threading.Timer(7.0, lambda: [node.unpause() for node in brokers])
    thaw.start()
    try:
        started = time.monotonic()
        parts = cluster.describe(ctx.topic, admin)
        took = time.monotonic() - started
    finally:
        thaw.join()
    assert [p.partition for p in parts] == [0] and parts[0].replicas, parts
    assert took >= 6.5, f"answered after {took:.1f} s while every broker was paused"


def test_a_preferred_election_moves_the_run_topics_leaders_back(cluster, ctx):
    """The rolling restart's election when auto.leader.rebalance is late: of the run topic's
    partitions (on a cluster we did not start, the other topics are not ours to move). The
    cluster's 5 s rebalance check can move the leader back between the rejoin and a look
    before the election: auto_s=0 asks for the election whatever the leaders are, and a
    partition already led by its preferred replica answers "not needed"."""
    from nemesis.schedule import Nemesis
    from scenarios.operations import restore_preferred_leaders
    from scenarios.script_steps import preferred_leaders

    old = cluster.describe(ctx.topic)[0].leader
    kill = Kill(str(old))
    kill.start(ctx)
    until(15, lambda: cluster.describe(ctx.topic)[0].leader not in (-1, old), "no new leader")
    kill.stop(ctx)
    until(30, lambda: old in cluster.describe(ctx.topic)[0].isr, "old leader did not rejoin")
    if preferred_leaders(ctx):  # the 5 s rebalance check came first: move it off again
        kill.start(ctx)
        kill.stop(ctx)
        until(30, lambda: old in cluster.describe(ctx.topic)[0].isr, "did not rejoin")
    assert restore_preferred_leaders(Nemesis(ctx), timeout_s=30, auto_s=0)
    (ev,) = [e for e in events(ctx) if e["kind"] == "preferred-leaders"]
    n = len(cluster.describe(ctx.topic))
    assert ev["detail"]["how"].startswith(f"preferred election of {ctx.topic}'s {n} partitions")
    assert preferred_leaders(ctx)
