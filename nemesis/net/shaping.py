"""Slow and lossy links on chosen nodes, optionally only towards chosen peers.

* **delay ± jitter**: with netem (when the kernel has it) on the node's outgoing packets
  (to the peers); otherwise with the NFQUEUE delayer (:mod:`nemesis.net.delayer`), a process in
  the node's namespace, on the node's incoming packets (from the peers; see the delayer for
  why ingress). Either way every round trip between the node and a peer gains the delay once.
* **loss** p on the node's incoming packets (from the peers, or from anyone but loopback):
  ``iptables -m statistic --mode random --probability p -j DROP`` in INPUT. Ingress, so the
  drops are silent for the sender (an OUTPUT drop would hand local senders EPERM, which TCP
  treats differently from a lost packet). A node's round trip to a peer then loses p.
* **bandwidth** on the node's outgoing packets: an htb class of the rate (with u32 filters
  by destination when only towards peers) on every interface that is up.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nemesis.net import iptables, tc
from nemesis.net.delayer import DELAYER_DIR, QUEUE_BASE, delay_tag
from nemesis.net.netns import NamespaceGone, NetNS

READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
Backend = Literal["auto", "netem", "nfqueue"]


@dataclass
class DelayerProcess:
    """A running delayer: its process, queue number and files."""

    proc: subprocess.Popen[str]
    queue: int
    stats_file: Path
    log_file: Path

    @property
    def pid(self) -> int:
        """The delayer's pid (nsenter/ip netns exec exec() it, so it is the Popen's pid)."""
        return self.proc.pid

    def stop(self) -> dict[str, Any]:
        """SIGTERM it (it removes its rule and lets held packets go), SIGKILL if it hangs.
        Returns the stats it wrote ({} if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        if self.proc.stdout:
            self.proc.stdout.close()
        stats: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            stats = json.loads(self.stats_file.read_text())
        for path in (self.stats_file, self.log_file):
            path.unlink(missing_ok=True)
        return stats


def start_delayer(ns: NetNS, fault_id: str, delay_ms: float, jitter_ms: float = 0.0,
                  peers: Sequence[str] = (), queue: int = QUEUE_BASE,
                  seed: int | None = None, hold_ms: float | None = None) -> DelayerProcess:
    """Start a delayer in ``ns`` and wait until its queue and rule are in place.
    ``hold_ms``: hold mode (nemesis.net.delayer), the window's length."""
    DELAYER_DIR.mkdir(parents=True, exist_ok=True)
    stats_file = DELAYER_DIR / f"{fault_id}.stats.json"
    log_file = DELAYER_DIR / f"{fault_id}.log"
    argv = [sys.executable, "-m", "nemesis.net.delayer", "--fault", fault_id,
            "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms),
            "--queue", str(queue), "--parent-pid", str(os.getpid()),
            "--stats-file", str(stats_file), "--log-file", str(log_file)]
    for peer in peers:
        argv += ["--peer", peer]
    if seed is not None:
        argv += ["--seed", str(seed)]
    if hold_ms is not None:
        argv += ["--hold-established-ms", str(hold_ms)]
    # the child imports chaos from the same tree as us, whatever its working directory
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    with open(log_file, "w") as log:
        # its own session: a Ctrl-C aimed at us must not kill it before we heal in order
        proc = ns.popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                        start_new_session=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("READY "):
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise RuntimeError(f"delayer in {ns} did not start: {log_file.read_text()[-2000:]}")
    return DelayerProcess(proc, int(line.split()[1]), stats_file, log_file)


@dataclass
class ShapingHandle:
    """A slow/lossy link in force. :meth:`heal` undoes it (idempotent, tolerates a vanished
    namespace)."""

    id: str
    ns: NetNS
    params: dict[str, Any]
    backend: str
    devices: list[str] = field(default_factory=list)
    delayer: DelayerProcess | None = None
    delayer_stats: dict[str, Any] = field(default_factory=dict)
    healed: bool = False

    def heal(self) -> None:
        """Stop the delayer, delete our rules and qdiscs."""
        if self.delayer is not None:
            self.delayer_stats = self.delayer.stop()
            self.delayer = None
        iptables.delete_tagged(self.ns, self.id)
        iptables.delete_tagged(self.ns, delay_tag(self.id))
        with contextlib.suppress(NamespaceGone):
            tc.remove(self.ns, self.devices)
        self.healed = True

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for events.jsonl details."""
        out = {"id": self.id, "ns": self.ns.describe(), "backend": self.backend,
               "devices": self.devices, "healed": self.healed, **self.params}
        if self.delayer is not None:
            out["delayer"] = {"pid": self.delayer.pid, "queue": self.delayer.queue}
        if self.delayer_stats:
            out["delayer_stats"] = self.delayer_stats
        return out


class Shaper:
    """Applies delay/jitter/loss/bandwidth to nodes; ``backend`` forces netem or nfqueue."""

    def __init__(self, backend: Backend = "auto") -> None:
        self.backend = backend
        self.active: list[ShapingHandle] = []

    def apply(self, ns: NetNS, *, delay_ms: float = 0.0, jitter_ms: float = 0.0,
              loss: float = 0.0, rate_kbit: float | None = None, peers: Sequence[str] = (),
              devices: Sequence[str] | None = None, seed: int | None = None,
              fault_id: str | None = None) -> ShapingHandle:
        """Shape ``ns``'s traffic (to/from ``peers`` only, if given). See the module doc.

        ``devices``: interfaces for the rate/netem qdisc (default: every interface that is
        up). ``seed``: the delayer's jitter RNG. ``fault_id``: the rule tag (default fresh).
        One shaping per node and peer: a second delay on the same packets does not add (the
        first NFQUEUE verdict ends the chain walk) and a second qdisc on a device is refused.
        """
        if not 0.0 <= loss <= 1.0:
            raise ValueError(f"loss must be a probability, not {loss}")
        if delay_ms < 0 or jitter_ms < 0 or jitter_ms > delay_ms:
            raise ValueError("need 0 <= jitter_ms <= delay_ms")
        if rate_kbit is not None and rate_kbit <= 0:
            raise ValueError("rate_kbit must be positive")
        use_netem = self.backend == "netem" or (
            self.backend == "auto" and delay_ms > 0 and tc.netem_available(ns))
        params = {"delay_ms": delay_ms, "jitter_ms": jitter_ms, "loss": loss,
                  "rate_kbit": rate_kbit, "peers": list(peers)}
        handle = ShapingHandle(fault_id or tc.fresh_id(), ns, params,
                               "netem" if use_netem else "nfqueue")
        try:
            # the qdiscs first: a device whose root qdisc is someone else's is refused
            # (tc.NotOurs) before anything of ours is added to the namespace
            netem = tc.netem_args(delay_ms, jitter_ms) if use_netem and delay_ms > 0 else []
            if rate_kbit or netem:
                devs = list(devices) if devices is not None else ns.interfaces()
                handle.devices = tc.install(ns, devs, rate_kbit, peers, netem)
            if loss > 0:
                self._add_loss(handle, loss, peers)
            if delay_ms > 0 and not use_netem:
                handle.delayer = start_delayer(ns, handle.id, delay_ms, jitter_ms, peers,
                                               seed=seed)
        except BaseException:
            handle.heal()
            raise
        self.active.append(handle)
        return handle

    @staticmethod
    def _add_loss(handle: ShapingHandle, loss: float, peers: Sequence[str]) -> None:
        drop = ("-m", "statistic", "--mode", "random", "--probability", f"{loss:.6f}")
        if peers:
            for peer in peers:
                iptables.add_rule(handle.ns, "INPUT", ("-s", peer, *drop), ("-j", "DROP"),
                                  handle.id, binary=iptables.family_binary(peer))
        else:
            for binary in iptables.BINARIES:
                iptables.add_rule(handle.ns, "INPUT", ("!", "-i", "lo", *drop), ("-j", "DROP"),
                                  handle.id, binary=binary)

    def heal_all(self) -> None:
        """Heal every shaping this shaper applied."""
        while self.active:
            self.active.pop().heal()

