"""The NFQUEUE delayer: a process inside a namespace that holds incoming packets for a delay.

For kernels without netem. Run inside the target namespace (the netlink socket binds the
queue of the namespace it is opened in), it:

1. binds the first free NFQUEUE number from ``--queue``,
2. adds its own rule ``INPUT [-s peer] ! -i lo -j NFQUEUE --queue-num N --queue-bypass``
   (tag ``kafka-chaos:<fault>-delay``), then prints ``READY <queue>`` on stdout,
3. holds each packet in a heap keyed by release time = arrival + delay ± uniform jitter, and
   accepts it when due. With jitter, a packet is never released before an earlier packet of
   the same flow (protocol, addresses, ports), so TCP sees no reordering from us,
4. on SIGTERM/SIGINT, or when its parent process dies (a pidfd in the poll set), deletes its
   rule, accepts every held packet and exits.

Why packets the node *receives*: a packet held in OUTPUT still counts against its sending
socket, and TCP Small Queues then allow only ~1 ms of data below the socket, so a 5 ms delay
on egress collapsed a TCP flow to a few Mbit/s. Held on ingress, the sender's socket has let
go of the packet (netem avoids the same trap by orphaning the packets it delays). For a round
trip it makes no difference which side is delayed.

``--queue-bypass`` means that if the delayer dies hard (SIGKILL), packets flow undelayed
instead of being dropped; the leftover rule is removed by heal or sweep. The queue also
fails open: if the socket falls behind, the kernel accepts packets instead of dropping them
(counted neither here nor as loss, so a delayer overload shows as less delay, not as loss).

Hold mode (``--hold-established-ms W``): for W ms from its start, every packet of a TCP
connection that was open before the delayer started (its first packet seen here is not a SYN)
is held, and all of them are released together, in arrival order, when the window ends; new
connections and other protocols pass (after ``--delay-ms``, 0 allowed). A client that gives
up on a request stuck on its old connection and retries on a new one is then answered first,
and the old request reaches the server afterwards: a stale request overtakes nothing in TCP,
only across connections, which is how a delayed EndTxn decides a later transaction
(KAFKA-17754).

Usage (normally via :func:`nemesis.net.shaping.start_delayer`)::

    python -m nemesis.net.delayer --fault ID --delay-ms 100 [--jitter-ms 10] [--peer IP]...
        [--hold-established-ms 8000] [--queue 4200] [--parent-pid PID] [--stats-file PATH]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import select
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from contract.held_requests import HELD_END_TXN, HOLD_COPY_BYTES, end_txn_request
from nemesis.net import iptables
from nemesis.net.netns import NetNS
from nemesis.net.nfqueue import NfQueue, flow_key, tcp_opening

QUEUE_BASE = 4200
DELAYER_DIR = Path("/run/kafka-chaos/delayers")  # <fault>.log (its stderr), <fault>.stats.json
QUEUE_TRIES = 64


@dataclass
class DelayerStats:
    """What a delayer did: packets seen and how late it released them versus schedule."""

    queue: int = 0
    packets: int = 0
    max_held: int = 0
    late_ms_max: float = 0.0
    late_ms_sum: float = 0.0
    seconds: float = 0.0

    @property
    def late_ms_mean(self) -> float:
        """Mean lateness of releases, ms (delay accuracy: 0 is perfect)."""
        return self.late_ms_sum / self.packets if self.packets else 0.0

    def as_dict(self) -> dict[str, float | str]:
        """JSON-able."""
        return {**asdict(self), "late_ms_mean": self.late_ms_mean}


def delay_tag(fault_id: str) -> str:
    """The rule tag of the delayer of fault ``fault_id``."""
    return f"{fault_id}-delay"


def bind_free_queue(start: int, copy_range: int = 64) -> NfQueue:
    """Bind the first NFQUEUE number from ``start`` that no one else in this namespace holds."""
    last: OSError | None = None
    for queue in range(start, start + QUEUE_TRIES):
        try:
            return NfQueue(queue, copy_range=copy_range)
        except OSError as exc:  # EBUSY: another delayer in this namespace holds it
            last = exc
    raise RuntimeError(f"no free NFQUEUE in {start}..{start + QUEUE_TRIES}: {last}")


def add_queue_rules(fault_id: str, queue: int, peers: list[str]) -> None:
    """Send the packets this namespace receives (from ``peers`` only, if any) to ``queue``."""
    ns = NetNS.current()
    target = ("-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass")
    if peers:
        for peer in peers:
            iptables.add_rule(ns, "INPUT", ("-s", peer, "!", "-i", "lo"), target,
                              delay_tag(fault_id), binary=iptables.family_binary(peer))
    else:
        for binary in iptables.BINARIES:
            iptables.add_rule(ns, "INPUT", ("!", "-i", "lo"), target, delay_tag(fault_id),
                              binary=binary)


class Delayer:
    """The release loop: a heap of (release time, order, packet id)."""

    def __init__(self, nfq: NfQueue, delay_s: float, jitter_s: float, seed: int | None,
                 hold_until: float | None = None) -> None:
        self.nfq = nfq
        self.delay_s = delay_s
        self.jitter_s = jitter_s
        # hold mode: monotonic end of the window, and the connections opened since the start
        self.hold_until = hold_until
        self.opened: set[bytes] = set()
        self.held_end_txn: list[dict[str, object]] = []  # EndTxn requests held (no repeats)
        self.rng = random.Random(seed)
        self.heap: list[tuple[float, int, int]] = []
        self.flow_last: dict[bytes, float] = {}
        self.order = 0
        self.stats = DelayerStats(queue=nfq.queue)
        self.orphaned = False

    def take(self, now: float) -> None:
        """Schedule every packet waiting on the socket."""
        for packet in self.nfq.receive():
            release = now + self.delay_s
            if self.hold_until is not None and now < self.hold_until:
                held = self._held_until(packet.head)
                release = max(release, held)
                end_txn = end_txn_request(packet.head) if held else None
                if end_txn is not None and end_txn not in self.held_end_txn:
                    self.held_end_txn.append(end_txn)  # KAFKA-17754's evidence
            if self.jitter_s:
                release += self.rng.uniform(-self.jitter_s, self.jitter_s)
                key = flow_key(packet.head)
                release = max(release, now, self.flow_last.get(key, 0.0))
                self.flow_last[key] = release
            self.order += 1
            heapq.heappush(self.heap, (release, self.order, packet.packet_id))
        self.stats.max_held = max(self.stats.max_held, len(self.heap))

    def _held_until(self, head: bytes) -> float:
        """The window's end for a packet of a connection older than the delayer, else 0."""
        opening = tcp_opening(head)
        if opening is None:
            return 0.0
        key = flow_key(head)
        if opening:
            self.opened.add(key)
        return 0.0 if key in self.opened else float(self.hold_until or 0.0)

    def release_due(self, now: float, everything: bool = False) -> None:
        """Accept every packet whose time has come (or all of them)."""
        due: list[int] = []
        stats = self.stats
        while self.heap and (everything or self.heap[0][0] <= now):
            release, _order, packet_id = heapq.heappop(self.heap)
            late_ms = max(0.0, (now - release) * 1000.0)
            stats.late_ms_sum += late_ms
            stats.late_ms_max = max(stats.late_ms_max, late_ms)
            due.append(packet_id)
        if due:
            stats.packets += len(due)
            if self.jitter_s or everything or self.hold_until is not None:
                self.nfq.verdicts(due)
            else:  # no jitter, no hold: releases follow arrival, ids are a prefix: one message
                self.nfq.verdict_upto(due[-1])
        if len(self.flow_last) > 4096:  # forget flows whose last packet is out
            self.flow_last = {k: t for k, t in self.flow_last.items() if t > now}

    def run(self, parent_fd: int | None, stopping: list[bool]) -> None:
        """Loop until ``stopping[0]`` or the parent dies."""
        # select(), not poll(): its timeout has microsecond resolution, poll()'s whole
        # milliseconds (rounded up), which made every release ~0.5 ms late on average
        watched = [self.nfq.fileno()] + ([parent_fd] if parent_fd is not None else [])
        started = time.monotonic()
        while not stopping[0]:
            wait_s = 0.5
            if self.heap:
                wait_s = max(0.0, self.heap[0][0] - time.monotonic())
            try:
                readable, _, _ = select.select(watched, [], [], wait_s)
            except InterruptedError:
                continue
            if parent_fd is not None and parent_fd in readable:
                self.orphaned = True
                break
            self.take(time.monotonic())
            self.release_due(time.monotonic())
        self.stats.seconds = time.monotonic() - started


def raise_priority() -> str:
    """Ask for a real-time (round-robin, lowest RT priority) or at least a better nice level.

    The delayer emulates a wire: on a busy host (brokers, Spark) an ordinary process is
    scheduled tens of ms late, and every ms late is added delay. It sleeps in poll() between
    releases, and the kernel's RT throttling caps it at 95% CPU even if it spun.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        return "rr"
    except OSError:
        pass
    try:
        os.nice(-10)
        return "nice-10"
    except OSError:
        return "default"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the delayer process."""
    parser = argparse.ArgumentParser(prog="nemesis.net.delayer")
    parser.add_argument("--fault", required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--peer", action="append", default=[])
    parser.add_argument("--queue", type=int, default=QUEUE_BASE)
    parser.add_argument("--parent-pid", type=int)
    parser.add_argument("--stats-file")
    parser.add_argument("--log-file", help="our stderr: deleted if we outlive our parent")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--hold-established-ms", type=float,
                        help="hold connections older than the delayer this long (hold mode)")
    parser.add_argument("--no-priority", action="store_true",
                        help="keep the default scheduling (see raise_priority)")
    args = parser.parse_args(argv)
    scheduling = "default" if args.no_priority else raise_priority()

    stopping = [False]

    def stop(_sig: int, _frame: FrameType | None) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent_fd = None
    if args.parent_pid:
        try:
            parent_fd = os.pidfd_open(args.parent_pid)
        except ProcessLookupError:
            return 3  # the parent is already gone: do nothing at all

    # hold mode reads the held packets' first bytes for EndTxn requests
    nfq = bind_free_queue(args.queue, HOLD_COPY_BYTES if args.hold_established_ms else 64)
    hold_until = (time.monotonic() + args.hold_established_ms / 1000.0
                  if args.hold_established_ms else None)
    delayer = Delayer(nfq, args.delay_ms / 1000.0, args.jitter_ms / 1000.0, args.seed,
                      hold_until)
    try:
        add_queue_rules(args.fault, nfq.queue, args.peer)
        print(f"READY {nfq.queue}", flush=True)
        delayer.run(parent_fd, stopping)
    finally:
        # rules first, so nothing new is queued; then let everything held go; then packets
        # that were queued between the two (the kernel would drop them when we unbind)
        iptables.delete_tagged(NetNS.current(), delay_tag(args.fault))
        delayer.release_due(time.monotonic(), everything=True)
        delayer.take(time.monotonic())
        delayer.release_due(time.monotonic(), everything=True)
        nfq.close()
        if args.stats_file and not delayer.orphaned:
            with open(args.stats_file, "w") as out:
                json.dump({**delayer.stats.as_dict(), "scheduling": scheduling,
                           HELD_END_TXN: delayer.held_end_txn}, out)
        if delayer.orphaned and args.log_file:  # no one is left to read it
            Path(args.log_file).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
