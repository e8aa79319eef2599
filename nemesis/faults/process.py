"""Process faults: kill -9 and restart, clean stop and start, pause and resume.

All go through the Docker engine (outside the container). A killed or stopped node keeps its
container, data volume and IP address, so ``stop`` brings back the same node id with the same
data. ``pause`` uses the engine's freezer (cgroup), which stops every thread at once like
SIGSTOP but leaves TCP connections open: clients and peers hang rather than error.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from nemesis.faults import targets as tg
from nemesis.faults.base import BaseFault, FaultContext


class _NodeFault(BaseFault):
    """Shared shape: resolve targets, act on each node at start, undo at stop."""

    verb = ""

    def __init__(self, target: str = "random", wait_ready: bool = True) -> None:
        super().__init__()
        self.target = target
        self.wait_ready = wait_ready

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.target}

    def start(self, ctx: FaultContext) -> None:
        self.targets = tg.resolve(self.target, ctx)
        # which broker coordinated each watched group before the fault struck
        coordinators = ctx.coordinators()
        for nid in self.targets:
            self._apply(ctx, nid)
        self._started(ctx, target=self.target, **self._start_detail(), **coordinators)

    def stop(self, ctx: FaultContext) -> None:
        if not self._active:
            return
        for nid in self.targets:
            self._undo(ctx, nid)
        brokers = [n for n in self.targets if n in ctx.cluster.brokers]
        self._ended(ctx, target=self.target)
        if self.wait_ready and ctx.settle and brokers:
            ctx.cluster.wait_brokers(brokers, timeout_s=90)

    def _start_detail(self) -> dict[str, Any]:
        return {}

    def _apply(self, ctx: FaultContext, nid: int) -> None:
        raise NotImplementedError

    def _undo(self, ctx: FaultContext, nid: int) -> None:
        raise NotImplementedError


def _ensure_running(ctx: FaultContext, nid: int) -> None:
    node = ctx.cluster.node(nid)
    status = node.status()
    if status == "paused":
        node.unpause()
    elif status != "running":
        node.start()


class Kill(_NodeFault):
    """SIGKILL the node's JVM (the container's pid 1); ``stop`` starts it again.

    The page cache survives a process kill, so Kafka loses nothing locally: any loss needs
    an election that picks a replica missing acknowledged data."""

    kind = "kill"

    def _apply(self, ctx: FaultContext, nid: int) -> None:
        import docker  # here: listing scenarios (the CLI) needs no Docker

        # Already down: killing a dead node is a no-op, as on a real host.
        with contextlib.suppress(docker.errors.APIError):
            ctx.cluster.node(nid).kill("SIGKILL")

    def _undo(self, ctx: FaultContext, nid: int) -> None:
        _ensure_running(ctx, nid)


class Stop(_NodeFault):
    """Clean shutdown (SIGTERM: Kafka flushes and moves leadership away); ``stop`` starts it."""

    kind = "stop"

    def _apply(self, ctx: FaultContext, nid: int) -> None:
        ctx.cluster.node(nid).stop(timeout=60)

    def _undo(self, ctx: FaultContext, nid: int) -> None:
        _ensure_running(ctx, nid)


#: How long a pause goes on asking for the freeze runc gave up on.
FREEZE_RETRY_S = 30.0


def _freeze_failed(e: BaseException) -> bool:
    import docker

    return isinstance(e, docker.errors.APIError) and "unable to freeze" in str(e)


class Pause(_NodeFault):
    """Freeze every process of the node (cgroup freezer); ``stop`` thaws it."""

    kind = "pause"

    def _apply(self, ctx: FaultContext, nid: int) -> None:
        node = ctx.cluster.node(nid)
        # runc gives up ("unable to freeze") when the cgroup's tasks do not all freeze within
        # its short loop, e.g. threads blocked in the kernel (an fsync on a busy disk), and
        # thaws it again; its maintainers leave the retry to the caller (runc#4388). On a
        # loaded machine five tries half a second apart all failed (a full test suite's
        # safe-config-chaos, a leader's pause), so the tries back off and go on for 30 s.
        for attempt in Retrying(stop=stop_after_delay(FREEZE_RETRY_S),
                                wait=wait_exponential(multiplier=0.25, max=4),
                                retry=retry_if_exception(_freeze_failed), reraise=True):
            with attempt:
                if node.status() == "running":
                    node.pause()

    def _undo(self, ctx: FaultContext, nid: int) -> None:
        node = ctx.cluster.node(nid)
        if node.status() == "paused":
            node.unpause()
