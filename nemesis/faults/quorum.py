"""A partition of the KRaft controller quorum (registry kind ``voter-partition``): reachable
from scripted scenarios, TOML steps and ``--faults`` alike through ``nemesis.faults.factory``."""

from __future__ import annotations

from nemesis.faults import targets as tg
from nemesis.faults.base import FaultContext, FaultError
from nemesis.faults.network import CLIENT, Partition, cluster_nodes, node_name
from nemesis.net import PartitionSpec

#: The cuts of the quorum a voter partition can make (the class docstring says what each is).
VOTER_SHAPES = ("leader-from-voters", "voter-minority", "voter-majority",
                "brokers-from-controllers", "broker-from-controllers")


class VoterPartition(Partition):
    """A partition of the KRaft controller quorum (dedicated controllers).

    ``leader-from-voters``: the active controller is cut from the other voters only; brokers
    still reach it, so it must notice it lost the quorum and resign (KAFKA-15489).
    ``voter-minority``: one voter that is not the active controller is cut from every node.
    ``voter-majority``: a majority of the voters, the active one among them, are each cut
    from every node: no quorum remains, so no metadata change can be made until healed.
    ``brokers-from-controllers``: every broker cut from every controller, both ways; the
    quorum stays whole and the clients still reach the brokers. Held past
    ``broker.session.timeout.ms`` the controllers fence every broker, which the brokers
    learn only at the heal (their metadata then lists no live broker until each is
    unfenced again: librdkafka#5301's trigger).
    ``broker-from-controllers``: one broker (``target``, e.g. ``coordinator``: the run's
    group's coordinator) cut from every controller, both ways; the clients and the other
    brokers still reach it. Held past the session timeout it alone is fenced and its
    leaderships move, while it learns nothing of that until the heal.
    """

    kind = "voter-partition"
    VOTER_SHAPES = VOTER_SHAPES

    def __init__(self, shape: str, target: str = "random") -> None:
        if shape not in self.VOTER_SHAPES:
            raise ValueError(f"unknown voter partition {shape!r}")
        # only the one-broker cut aims at a node the caller names
        super().__init__("isolate", target if shape == "broker-from-controllers"
                         else "controller")
        self.shape = shape

    def spec(self, ctx: FaultContext) -> PartitionSpec:
        voters = list(ctx.cluster.controller_ids)
        if len(voters) < 3:
            raise FaultError("a quorum partition needs 3 or more controllers")
        nodes = cluster_nodes(ctx)
        names = [n.name for n in nodes if n.name != CLIENT]
        active = ctx.cluster.active_controller()
        others = [v for v in voters if v != active]
        if self.shape == "leader-from-voters":
            self.targets = [active]
            return PartitionSpec.cut_from(nodes, node_name(active),
                                          [node_name(v) for v in others])
        if self.shape == "brokers-from-controllers":
            self.targets = sorted(voters)
            ctl = [node_name(v) for v in voters]
            brokers = [n for n in names if n not in ctl]
            if not brokers:
                raise FaultError("cutting the brokers from the controllers needs dedicated "
                                 "controllers")
            return PartitionSpec.custom(
                nodes, {(b, c) for b in brokers for c in ctl}
                | {(c, b) for b in brokers for c in ctl}, shape=self.shape)
        if self.shape == "broker-from-controllers":
            ctl = [node_name(v) for v in voters]
            chosen = tg.resolve(self.target, ctx)
            if (len(chosen) != 1 or node_name(chosen[0]) in ctl
                    or node_name(chosen[0]) not in names):
                raise FaultError(f"broker-from-controllers needs one broker that is not a "
                                 f"controller; {self.target!r} named {chosen}")
            self.targets = chosen
            b = node_name(chosen[0])
            return PartitionSpec.custom(
                nodes, {(b, c) for c in ctl} | {(c, b) for c in ctl}, shape=self.shape)
        if self.shape == "voter-minority":
            chosen = [ctx.rng.choice(others)]
        else:
            chosen = [active] + others[: len(voters) // 2]
        self.targets = sorted(chosen)
        cut = {node_name(v) for v in chosen}
        return PartitionSpec.custom(
            nodes, {(a, b) for a in cut for b in names if a != b}
            | {(b, a) for a in cut for b in names if a != b}, shape=self.shape)
