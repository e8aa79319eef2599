"""Network faults on a cluster: partitions of any shape, and slow or lossy links.

Built on :mod:`nemesis.net`, which enters each node's network namespace from the host. The
nodes are resolved at fault time (a restarted container has a new namespace), and heal
tolerates namespaces that have gone away with a restart: their rules went with them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeGuard

from nemesis.faults import targets as tg
from nemesis.faults.base import BaseFault, FaultContext, FaultError
from nemesis.net import NetNS, Node, Partitioner, PartitionHandle, PartitionSpec, Shaper, tc
from nemesis.net.shaping import ShapingHandle

if TYPE_CHECKING:
    from compose.remote import SshNode

CLIENT = "client"
SHAPES = ("isolate", "halves", "ring", "bridge", "one-way", "leader-followers", "client")


def node_name(nid: int) -> str:
    return f"n{nid}"


def over_ssh(node: object) -> TypeGuard[SshNode]:
    """Whether ``node`` is reached over SSH (not a container of ours)."""
    from compose.remote import SshNode  # here: listing scenarios (the CLI) needs no Docker

    return isinstance(node, SshNode)


def netns_of(node: Any) -> NetNS | None:
    """Where a node's network rules go: a local container's namespace (None while it is
    down: its rules went with it), or the host of a node reached over SSH (always there)."""
    if over_ssh(node):
        return NetNS.over_ssh(f"n{node.node_id}-{node.ssh.host}", node.ssh.argv(),
                              node.ssh.port)
    pid = node.pid()
    return NetNS.from_pid(pid) if pid else None


def cluster_nodes(ctx: FaultContext, with_client: bool = True) -> list[Node]:
    """Every running node as a partitionable :class:`Node`, plus the client host."""
    nodes = []
    for nid in sorted(ctx.cluster.nodes):
        node = ctx.cluster.node(nid)
        nodes.append(Node(node_name(nid), (node.ip,), netns_of(node)))
    if with_client:
        nodes.append(Node(CLIENT, (ctx.cluster.gateway_ip,), None))
    return nodes


class Partition(BaseFault):
    """A network partition of the named ``shape``; ``target`` picks the node it centres on.

    Shapes: ``isolate`` (target cut from every other node; the client still reaches it),
    ``halves`` (a random minority cut from the majority), ``ring`` (each node reaches only
    its neighbours; 4+ nodes), ``bridge`` (two halves that both reach the target),
    ``one-way`` (the target cannot open connections to one other node, which still reaches
    it), ``leader-followers`` (the target — default the leader — cut from the partition's
    followers while the client still reaches it), ``client`` (the client host cut from the
    target brokers: ``target="all"`` cuts it from every broker). ``reset``: TCP is answered
    with a reset instead of dropped, and the connections open at the start are closed
    (nemesis.net.partition.PartitionSpec.reset).
    """

    kind = "partition"

    def __init__(self, shape: str = "isolate", target: str = "random",
                 peer: str | None = None, reset: bool = False) -> None:
        super().__init__()
        self.peer = peer  # one-way only: the node the target cannot reach (default random)
        self.reset = reset
        if shape not in SHAPES:
            raise ValueError(f"unknown partition shape {shape!r} (known: {', '.join(SHAPES)})")
        self.shape = shape
        self.target = "leader" if shape == "leader-followers" and target == "random" else target
        self._handle: PartitionHandle | None = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "shape": self.shape, "target": self.target,
                **({"reset": True} if self.reset else {})}

    def spec(self, ctx: FaultContext) -> PartitionSpec:
        """Resolves targets now and builds the partition's cut relation."""
        nodes = cluster_nodes(ctx)
        names = [n.name for n in nodes if n.name != CLIENT]
        down = [n.name for n in nodes if n.ns is None and n.name != CLIENT]
        if down:
            raise FaultError(f"cannot partition while nodes {down} are down")
        self.targets = tg.resolve(self.target, ctx)
        t = node_name(self.targets[0])
        others = [n for n in names if n != t]
        if self.shape == "isolate":
            return PartitionSpec.custom(
                nodes, {(t, o) for o in others} | {(o, t) for o in others}, shape="isolate")
        if self.shape == "halves":
            shuffled = names[:]
            ctx.rng.shuffle(shuffled)
            minority = shuffled[: (len(names) - 1) // 2] or shuffled[:1]
            self.targets = sorted(int(n[1:]) for n in minority)
            majority = [n for n in names if n not in minority]
            return PartitionSpec.custom(
                nodes, {(a, b) for a in minority for b in majority}
                | {(b, a) for a in minority for b in majority}, shape="halves")
        if self.shape == "ring":
            order = names[:]
            ctx.rng.shuffle(order)
            return PartitionSpec.custom(nodes, PartitionSpec.ring(
                [n for n in nodes if n.name != CLIENT], order).cuts, shape="ring")
        if self.shape == "bridge":
            if len(others) < 2:
                raise FaultError("a bridge needs at least 3 nodes")
            left = others[: len(others) // 2]
            right = others[len(others) // 2:]
            return PartitionSpec.bridge(nodes, t, left, right)
        if self.shape == "one-way":
            dst = (node_name(tg.resolve(self.peer, ctx)[0]) if self.peer
                   else ctx.rng.choice(others))
            self.targets = [self.targets[0], int(dst[1:])]
            return PartitionSpec.one_way(nodes, t, dst, mode="connections")
        if self.shape == "leader-followers":
            # The target's fellow replicas of the partition: the followers when the target is
            # the leader; the leader and the other followers when a random draw made it a
            # follower (cutting it from itself was a failed start).
            peers = [node_name(r) for r in tg.replicas(ctx) if node_name(r) != t]
            if not peers:
                raise FaultError(f"broker {t} has no fellow replica to be cut from")
            return PartitionSpec.cut_from(nodes, t, peers)
        # client: the client host cut from every target broker (target all: from all of them)
        cuts = {c for x in self.targets for c in ((node_name(x), CLIENT), (CLIENT, node_name(x)))}
        return PartitionSpec.custom(nodes, cuts, shape="client")

    def start(self, ctx: FaultContext) -> None:
        spec = dataclasses.replace(self.spec(ctx), reset=self.reset)
        self._handle = Partitioner().apply(spec)
        self._started(ctx, shape=self.shape, target=self.target,
                      cuts=sorted([a, b] for a, b in spec.cuts),
                      **({"reset": True} if self.reset else {}))

    def stop(self, ctx: FaultContext) -> None:
        if self._handle is None:
            return
        self._handle.heal()
        self._handle = None
        self._ended(ctx, shape=self.shape)


class Slow(BaseFault):
    """Added delay (with jitter), packet loss and/or a bandwidth cap on the target nodes,
    towards every other node of the cluster (``peers="cluster"``) or all traffic.

    Delay is added once per round trip; loss hits what the node receives; the bandwidth cap
    holds in both directions between the node and the rest of the cluster."""

    kind = "slow"

    def __init__(self, target: str = "random", delay_ms: float = 100.0, jitter_ms: float = 0.0,
                 loss: float = 0.0, rate_kbit: float | None = None,
                 peers: str = "cluster") -> None:
        super().__init__()
        if peers not in ("cluster", "all"):
            raise ValueError("peers must be 'cluster' or 'all'")
        self.target = target
        self.params: dict[str, Any] = {"delay_ms": delay_ms, "jitter_ms": jitter_ms,
                                       "loss": loss, "rate_kbit": rate_kbit}
        self.peers = peers
        self._handles: list[ShapingHandle] = []

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.target, **self.params}

    def start(self, ctx: FaultContext) -> None:
        self.targets = tg.resolve(self.target, ctx)
        remote = any(over_ssh(n) for n in ctx.cluster.nodes.values())
        # On a remote host only tc netem can shape: the userspace delayer runs locally.
        shaper = Shaper("netem" if remote else "auto")
        try:
            for nid in self.targets:
                ns = netns_of(ctx.cluster.node(nid))
                if ns is None:
                    raise FaultError(f"node {nid} is down; cannot slow its links")
                if remote and self.params["delay_ms"] and not tc.netem_available(ns):
                    raise FaultError(f"node {nid}: a delay over SSH needs tc netem on the node "
                                     "(kernel module sch_netem); loss and rate caps work "
                                     "without it")
                peers = ([n.ip for i, n in ctx.cluster.nodes.items() if i != nid]
                         if self.peers == "cluster" else [])
                self._handles.append(shaper.apply(ns, peers=peers,
                                                  seed=ctx.rng.randrange(1 << 30),
                                                  **self.params))
                if self.params["rate_kbit"]:
                    self._cap_ingress(ctx, shaper, nid)
        except BaseException:
            self._heal_handles()
            raise
        self._started(ctx, target=self.target, peers=self.peers, **self.params)

    def _cap_ingress(self, ctx: FaultContext, shaper: Shaper, nid: int) -> None:
        """A bandwidth cap must slow what the node *receives* too (a follower's fetched data
        is the leader's egress): cap every other running node's egress towards it."""
        ip = ctx.cluster.node(nid).ip
        for other, node in ctx.cluster.nodes.items():
            ns = netns_of(node) if other != nid else None
            if ns is not None and other not in self.targets:
                self._handles.append(shaper.apply(ns, peers=[ip],
                                                  rate_kbit=self.params["rate_kbit"]))

    def _heal_handles(self) -> None:
        """Heals every handle, newest first; one that fails (its node unreachable over SSH)
        is kept for the next try and the first error raised once the others are healed."""
        kept: list[ShapingHandle] = []
        errors: list[Exception] = []
        while self._handles:
            handle = self._handles.pop()
            try:
                handle.heal()
            except Exception as e:  # noqa: BLE001 - raised below, after the other handles
                kept.insert(0, handle)
                errors.append(e)
        self._handles = kept
        if errors:
            raise errors[0]

    def stop(self, ctx: FaultContext) -> None:
        if not self._active:
            self._heal_handles()
            return
        self._heal_handles()
        self._ended(ctx)
