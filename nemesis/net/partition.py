"""Network partitions of any shape, as iptables DROP rules in the nodes' namespaces.

A partition is a directed *cannot-reach* relation between nodes: the cut ``(a, b)`` means
"a cannot reach b". Symmetric shapes (isolate, split, ring, bridge, cut_from) cut both
directions; :meth:`PartitionSpec.one_way` cuts one.

Where a cut goes: ``(a, b)`` becomes a rule in *b*'s INPUT dropping packets from a's IPs (the
receiver drops, as Jepsen does and Kafka's Trogdor does); when b is a node we cannot enter
(``ns=None``, e.g. the host that runs the clients) it becomes a rule in *a*'s OUTPUT dropping
packets to b's IPs instead. Rules match every packet (not only NEW), so a partition also
stops connections that are already open, at once.

Two modes say what one-way means for TCP, which needs packets both ways:

* ``packets`` (default): every packet a sends to b is dropped. Datagrams b sends reach a. No
  TCP connection between a and b works in either direction (b's SYN reaches a, but a's
  SYN-ACK is dropped), so for TCP a one-way cut looks like a full cut with slower failures:
  b's connects time out in SYN-RECV on a's side, a's connects time out in SYN-SENT.
* ``connections``: a cannot open connections to b, and the connections a opened to b stop at
  once; connections b opens to a keep working in full (a's replies pass). Implemented with
  ``-m conntrack --ctdir ORIGINAL``: only packets flowing in the direction of the connection's
  opener are dropped. Conntrack must have seen a connection from its start to know who
  opened it; call :func:`arm_conntrack` on the namespaces when the cluster starts (Docker's
  embedded DNS rules usually arm it already in containers on user-defined networks).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from nemesis.net import iptables
from nemesis.net.netns import NamespaceGone, NetNS

PartitionMode = Literal["packets", "connections"]
CONNTRACK_ARM_ID = "conntrack-arm"


@dataclass(frozen=True)
class Node:
    """A partitionable node: a name, its IPs, and its namespace (None: we cannot enter it)."""

    name: str
    ips: tuple[str, ...]
    ns: NetNS | None = None

    def describe(self) -> dict[str, Any]:
        """A JSON-able description."""
        return {"ips": list(self.ips), "ns": self.ns.describe() if self.ns else None}

    @classmethod
    def from_container(cls, name: str, container: str) -> Node:
        """A running Docker container as a node: its namespace and its IP on every network."""
        networks = _docker_networks(container)
        ips = tuple(n["IPAddress"] for n in networks.values() if n.get("IPAddress"))
        return cls(name, ips, NetNS.from_container(container))

    @classmethod
    def host_side_of(cls, name: str, container: str) -> Node:
        """The host (e.g. the clients) as seen by ``container``: its gateway address on each of
        the container's networks. No namespace: rules for it go into the other side."""
        networks = _docker_networks(container)
        return cls(name, tuple(n["Gateway"] for n in networks.values() if n.get("Gateway")))


def _docker_networks(container: str) -> dict[str, dict[str, Any]]:
    out = subprocess.run(
        ["docker", "inspect", "--format", "{{json .NetworkSettings.Networks}}", container],
        capture_output=True, text=True, timeout=30, check=False)
    if out.returncode != 0:
        raise NamespaceGone(f"docker inspect {container}: {out.stderr.strip()}")
    return dict(json.loads(out.stdout) or {})


@dataclass(frozen=True)
class PartitionSpec:
    """A partition shape: the nodes involved and which (src, dst) pairs are cut."""

    shape: str
    nodes: tuple[Node, ...]
    cuts: frozenset[tuple[str, str]]
    mode: PartitionMode = "packets"
    # TCP answered with a reset instead of dropped (REJECT --reject-with tcp-reset): a
    # connect fails at once, as to a host whose port is closed, and the open connections
    # the cut matches are closed when it begins (an idle client, which sends nothing a
    # reset could answer, sees its brokers down at once, not at its next request)
    reset: bool = False

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate node names in {names}")
        for src, dst in self.cuts:
            if src not in names or dst not in names or src == dst:
                raise ValueError(f"bad cut {src!r} -> {dst!r} (nodes: {names})")
            if self.node(src).ns is None and self.node(dst).ns is None:
                raise ValueError(f"cut {src}->{dst}: neither node has a namespace we can enter")

    def node(self, name: str) -> Node:
        """The node called ``name``."""
        return next(n for n in self.nodes if n.name == name)

    def can_reach(self, src: str, dst: str) -> bool:
        """Whether ``src``'s packets reach ``dst`` under this partition."""
        return (src, dst) not in self.cuts

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for events.jsonl details."""
        return {
            "shape": self.shape,
            "mode": self.mode,
            **({"reset": True} if self.reset else {}),
            "cuts": sorted([src, dst] for src, dst in self.cuts),
            "nodes": {n.name: n.describe() for n in self.nodes},
        }

    # -- shapes -----------------------------------------------------------------------------

    @classmethod
    def custom(cls, nodes: Sequence[Node], cuts: Iterable[tuple[str, str]],
               mode: PartitionMode = "packets", shape: str = "custom") -> PartitionSpec:
        """Any directed cannot-reach relation."""
        return cls(shape, tuple(nodes), frozenset(cuts), mode)

    @classmethod
    def split(cls, nodes: Sequence[Node], groups: Sequence[Sequence[str]],
              shape: str = "split") -> PartitionSpec:
        """Groups that cannot reach each other (e.g. majority/minority). Nodes named in no
        group form one more group together."""
        named = {name for group in groups for name in group}
        rest = [n.name for n in nodes if n.name not in named]
        all_groups = [list(g) for g in groups] + ([rest] if rest else [])
        group_of = {name: i for i, group in enumerate(all_groups) for name in group}
        cuts = {
            (a.name, b.name) for a, b in itertools.permutations(nodes, 2)
            if group_of[a.name] != group_of[b.name]
        }
        return cls.custom(nodes, cuts, shape=shape)

    @classmethod
    def isolate(cls, nodes: Sequence[Node], victim: str) -> PartitionSpec:
        """``victim`` can reach no one and no one can reach it."""
        return cls.split(nodes, [[victim]], shape="isolate")

    @classmethod
    def cut_from(cls, nodes: Sequence[Node], node: str, peers: Sequence[str]) -> PartitionSpec:
        """``node`` and ``peers`` cannot reach each other; everyone else reaches everyone
        (e.g. the leader cut from its followers while clients and controllers still reach it,
        or the client host cut from one broker)."""
        cuts = {(node, p) for p in peers} | {(p, node) for p in peers}
        return cls.custom(nodes, cuts, shape="cut-from")

    @classmethod
    def ring(cls, nodes: Sequence[Node], order: Sequence[str] | None = None) -> PartitionSpec:
        """Each node reaches only its two neighbours in ``order`` (default: node order)."""
        names = list(order or [n.name for n in nodes])
        count = len(names)
        if count < 4:
            raise ValueError("a ring needs at least 4 nodes (with 3 everyone is a neighbour)")
        neighbours = {
            name: {names[(i - 1) % count], names[(i + 1) % count]} for i, name in enumerate(names)
        }
        cuts = {(a, b) for a in names for b in names if a != b and b not in neighbours[a]}
        return cls.custom(nodes, cuts, shape="ring")

    @classmethod
    def bridge(cls, nodes: Sequence[Node], bridge: str, left: Sequence[str],
               right: Sequence[str] | None = None) -> PartitionSpec:
        """Two halves that cannot reach each other but both reach the ``bridge`` node."""
        right_names = list(right) if right is not None else [
            n.name for n in nodes if n.name != bridge and n.name not in left
        ]
        cuts = {(a, b) for a in left for b in right_names} | {(b, a) for a in left
                                                             for b in right_names}
        return cls.custom(nodes, cuts, shape="bridge")

    @classmethod
    def one_way(cls, nodes: Sequence[Node], src: str, dst: str,
                mode: PartitionMode = "packets") -> PartitionSpec:
        """``src`` cannot reach ``dst``; ``dst`` still reaches ``src`` (see module doc for
        what that means for TCP in each mode)."""
        return cls.custom(nodes, {(src, dst)}, mode=mode, shape="one-way")


@dataclass(frozen=True)
class PlannedRule:
    """One DROP rule: where it goes and what it matches."""

    node: str
    ns: NetNS
    hook: iptables.Hook
    binary: str
    match: tuple[str, ...]


def _spare_control(ns: NetNS, port_flag: str) -> tuple[str, ...]:
    """A rule on a node reached over SSH must not cut the SSH connection that heals it:
    such rules drop TCP except the SSH port (Kafka speaks only TCP). Every rule there, not
    only a cut from this host. That spares connections *to* the node's SSH port, not the
    replies a node gets on one it opened to another's: a run whose SSH comes from a node's
    address (run on it, or through it as a bastion) is refused before it starts
    (``runner.config.ssh_peer_refusal``)."""
    if ns.control_port is None:
        return ()
    return ("-p", "tcp", "!", port_flag, str(ns.control_port))


def plan_rules(spec: PartitionSpec) -> list[PlannedRule]:
    """The iptables rules that realise ``spec`` (pure: touches no kernel)."""
    conn = ("-m", "conntrack", "--ctdir", "ORIGINAL") if spec.mode == "connections" else ()
    planned: list[PlannedRule] = []
    for src_name, dst_name in sorted(spec.cuts):
        src, dst = spec.node(src_name), spec.node(dst_name)
        if dst.ns is not None:
            spare = _spare_control(dst.ns, "--dport")
            for ip in src.ips:
                planned.append(PlannedRule(dst.name, dst.ns, "INPUT", iptables.family_binary(ip),
                                           ("-s", ip, *spare, *conn)))
        elif src.ns is not None:
            spare = _spare_control(src.ns, "--sport")
            for ip in dst.ips:
                planned.append(PlannedRule(src.name, src.ns, "OUTPUT", iptables.family_binary(ip),
                                           ("-d", ip, *spare, *conn)))
    return planned


@dataclass
class PartitionHandle:
    """A partition in force. :meth:`heal` removes exactly its rules (idempotent)."""

    id: str
    spec: PartitionSpec
    rules: list[PlannedRule] = field(default_factory=list)
    healed: bool = False

    def heal(self) -> int:
        """Delete this partition's rules from every namespace; tolerate vanished namespaces.
        Returns the number of rules deleted (0 on a second call). A namespace that fails
        (a node unreachable over SSH) does not keep the others cut: each is tried, then the
        first error is raised and the handle stays unhealed, for the heal to be retried."""
        deleted = 0
        errors: list[Exception] = []
        for ns in {rule.ns for rule in self.rules}:
            try:
                deleted += iptables.delete_tagged(ns, self.id)
            except Exception as e:  # noqa: BLE001 - raised below, after the other namespaces
                errors.append(e)
        if errors:
            raise errors[0]
        self.healed = True
        return deleted

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for events.jsonl details."""
        return {"id": self.id, "rules": len(self.rules), "healed": self.healed,
                **self.spec.describe()}


class Partitioner:
    """Applies partition specs; remembers what it applied so :meth:`heal_all` can undo it."""

    def __init__(self) -> None:
        self.active: list[PartitionHandle] = []

    def apply(self, spec: PartitionSpec, fault_id: str | None = None) -> PartitionHandle:
        """Insert the rules of ``spec`` (tagged ``kafka-chaos:<fault_id>``, default a fresh
        ``part-<hex>``); on any failure remove what was inserted and raise."""
        handle = PartitionHandle(fault_id or f"part-{uuid.uuid4().hex[:8]}", spec)
        by_ns: dict[NetNS, list[PlannedRule]] = {}
        for rule in plan_rules(spec):
            by_ns.setdefault(rule.ns, []).append(rule)
        try:
            for ns, planned in by_ns.items():  # all of one namespace's rules in one go
                handle.rules.extend(planned)
                iptables.add_rules(ns, [_rule(r, spec.reset) for r in planned], handle.id)
            if spec.reset:
                for ns, peer in {(r.ns, _peer(r)) for r in handle.rules}:
                    _close_open(ns, peer)
        except BaseException:
            handle.heal()
            raise
        self.active.append(handle)
        return handle

    def heal_all(self) -> None:
        """Heal every partition this partitioner applied."""
        while self.active:
            self.active.pop().heal()


def _rule(r: PlannedRule, reset: bool) -> iptables.Rule:
    """The iptables rule of ``r``: a DROP, or for a reset cut a TCP reset (Kafka speaks TCP
    only)."""
    if not reset:
        return iptables.Rule(r.hook, r.match, ("-j", "DROP"), r.binary, "top")
    match = r.match if "-p" in r.match else ("-p", "tcp", *r.match)
    if r.hook == "OUTPUT":  # the resets the node's INPUT rules send leave through OUTPUT
        match = (*match, "!", "--tcp-flags", "RST", "RST")
    return iptables.Rule(r.hook, match, ("-j", "REJECT", "--reject-with", "tcp-reset"),
                         r.binary, "top")


def _peer(r: PlannedRule) -> str:
    """The address ``r`` cuts its namespace from."""
    return r.match[r.match.index("-s" if r.hook == "INPUT" else "-d") + 1]


def _close_open(ns: NetNS, peer: str) -> None:
    """Closes the TCP sockets in ``ns`` whose remote end is ``peer`` (``ss -K``: the kernel
    resets them), so a reset cut also ends the connections open when it begins. A node
    reached over SSH keeps the connections to its SSH port (the ones that heal it)."""
    spare = ["and", "not", "sport", "=", f":{ns.control_port}"] if ns.control_port else []
    ns.run(["ss", "-K", "-t", "dst", peer, *spare], check=False)


def arm_conntrack(ns: NetNS) -> None:
    """Make conntrack follow every connection in ``ns`` from its first packet, so that a later
    ``connections``-mode partition knows who opened each connection. Removed by sweep."""
    iptables.add_rule(ns, "INPUT", ("-m", "conntrack", "--ctstate", "INVALID"), ("-j", "RETURN"),
                      CONNTRACK_ARM_ID)


def disarm_conntrack(ns: NetNS) -> None:
    """Undo :func:`arm_conntrack`."""
    iptables.delete_tagged(ns, CONNTRACK_ARM_ID)
