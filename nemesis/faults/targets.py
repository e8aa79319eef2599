"""Choosing a fault's nodes at fault time: the leader of a partition, its followers, the
active controller, random nodes, or explicit ids.

A target is written as a string so scenarios and the CLI can name it:
``leader`` / ``leader:P`` (leader of partition P of the context's topic, default 0),
``followers`` / ``followers:P``, ``follower`` / ``follower:P`` (one follower),
``controller`` (the active KRaft controller), ``coordinator`` / ``coordinator:GROUP`` (the
broker coordinating a consumer group, default the run's), ``random`` / ``random:N``, ``all``,
``minority`` / ``majority`` (of the brokers), or ids ``1,3``.
"""

from __future__ import annotations

from contract.settings import DEFAULT_GROUP_ID
from nemesis.faults.base import FaultContext, FaultError


def _partition_arg(spec: str) -> int:
    return int(spec.split(":", 1)[1]) if ":" in spec else 0


def _partition_state(ctx: FaultContext, partition: int) -> tuple[int, list[int]]:
    for p in ctx.cluster.describe(ctx.topic):
        if p.partition == partition:
            return p.leader, list(p.replicas)
    raise FaultError(f"partition {ctx.topic}-{partition} does not exist")


def replicas(ctx: FaultContext, partition: int = 0) -> list[int]:
    """The replicas of a partition of the context's topic, leader included (one metadata read)."""
    return _partition_state(ctx, partition)[1]


def resolve(spec: str, ctx: FaultContext) -> list[int]:
    """Node ids the target ``spec`` names right now (reads the cluster's metadata)."""
    brokers = sorted(ctx.cluster.brokers)
    name = spec.split(":", 1)[0]
    if name == "leader":
        leader, _ = _partition_state(ctx, _partition_arg(spec))
        if leader < 0:
            raise FaultError(f"{ctx.topic}-{_partition_arg(spec)} has no leader now")
        return [leader]
    if name in ("followers", "follower"):
        leader, replicas = _partition_state(ctx, _partition_arg(spec))
        followers = [r for r in replicas if r != leader]
        if name == "follower":
            return [ctx.rng.choice(followers)] if followers else []
        return followers
    if name == "controller":
        return [ctx.cluster.active_controller()]
    if name == "coordinator":
        group = spec.split(":", 1)[1] if ":" in spec else DEFAULT_GROUP_ID
        return [ctx.cluster.group_coordinator(group)]
    if name == "random":
        n = int(spec.split(":", 1)[1]) if ":" in spec else 1
        return sorted(ctx.rng.sample(brokers, min(n, len(brokers))))
    if name == "all":
        return brokers
    if name in ("minority", "majority"):
        shuffled = brokers[:]
        ctx.rng.shuffle(shuffled)
        k = (len(brokers) - 1) // 2
        return sorted(shuffled[:k] if name == "minority" else shuffled[: len(brokers) - k])
    try:
        ids = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise FaultError(f"unknown target {spec!r}") from None
    unknown = [i for i in ids if i not in ctx.cluster.nodes]
    if unknown:
        raise FaultError(f"target names unknown node ids {unknown}")
    return ids


def validate(spec: str) -> None:
    """Raises ValueError for a target spec that can never resolve (checked before a run)."""
    name = spec.split(":", 1)[0]
    known = {"leader", "followers", "follower", "controller", "random", "all",
             "minority", "majority"}
    if name == "coordinator":
        return  # any group id after ':'
    if name in known:
        if ":" in spec and not spec.split(":", 1)[1].isdigit():
            raise ValueError(f"target {spec!r}: the part after ':' must be a number")
        return
    if not all(x.strip().isdigit() for x in spec.split(",")):
        raise ValueError(f"unknown target {spec!r}")
