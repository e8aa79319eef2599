"""Holding the requests clients already have in flight to a node, while new connections are
served at once: the network half of a delayed request overtaken by its own retry.

A client that gets no answer within its request timeout closes the connection and retries
on a new one; the held request reaches the node when the window ends, after the retry and
after whatever the client did next. TCP never lets a request overtake another on one
connection, so only this (a stale connection released late) reorders a client's requests at
the broker: how a delayed EndTxn decides a later transaction (KAFKA-17754).

Local containers only: the delayer runs in the node's network namespace (nemesis.net.delayer,
hold mode), receiving from the kafka-chaos host.
"""

from __future__ import annotations

from typing import Any

from contract.held_requests import HELD_END_TXN
from nemesis.faults import targets as tg
from nemesis.faults.base import BaseFault, FaultContext, FaultError
from nemesis.faults.network import netns_of, over_ssh
from nemesis.net.shaping import DelayerProcess, start_delayer
from nemesis.net.tc import fresh_id


class Hold(BaseFault):
    """For ``hold_s`` seconds, packets the target nodes receive from the clients on
    connections opened before the fault are held, then released together in order."""

    kind = "hold"

    def __init__(self, target: str = "random", hold_s: float = 8.0) -> None:
        super().__init__()
        if hold_s <= 0:
            raise ValueError("hold_s must be > 0")
        self.target = target
        self.hold_s = hold_s
        self._delayers: list[DelayerProcess] = []

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.target, "hold_s": self.hold_s}

    def start(self, ctx: FaultContext) -> None:
        self.targets = tg.resolve(self.target, ctx)
        try:
            for nid in self.targets:
                node = ctx.cluster.node(nid)
                if over_ssh(node):
                    raise FaultError("hold needs the node's namespace on this host "
                                     "(not over SSH)")
                ns = netns_of(node)
                if ns is None:
                    raise FaultError(f"node {nid} is down; cannot hold its connections")
                self._delayers.append(start_delayer(
                    ns, f"{fresh_id()}-hold", 0.0, peers=[ctx.cluster.gateway_ip],
                    hold_ms=self.hold_s * 1000))
        except BaseException:
            self._stop_delayers()
            raise
        self._started(ctx, target=self.target, hold_s=self.hold_s)

    def stop(self, ctx: FaultContext) -> None:
        if not self._delayers:
            return
        held = self._stop_delayers()
        # the EndTxn requests it held: a torn transaction's KAFKA-17754 evidence
        self._ended(ctx, target=self.target, **{HELD_END_TXN: held})

    def _stop_delayers(self) -> list[dict[str, Any]]:
        held: list[dict[str, Any]] = []
        while self._delayers:
            stats = self._delayers.pop().stop()  # removes its rule, releases what it holds
            held += [r for r in stats.get(HELD_END_TXN) or [] if r not in held]
        return held
