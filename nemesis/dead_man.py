"""A dead-man switch on every node of nodes.toml: faults that undo themselves.

Healing happens in the orchestrator; if it vanishes (SIGKILL, an OOM-killed CI runner, an
SSH connection that drops during the heal) a node must not stay cut, shaped, paused or down.
So before the first fault each SSH node gets a detached watchdog of its own (``setsid``, no
terminal, no parent of ours): it watches a lease file the run touches every
``deadline_s / 4`` seconds, and when the lease is ``deadline_s`` old it undoes everything of
ours on that node — our iptables chains (both families), our tc root qdiscs (``4b43:``), a
SIGSTOPped broker (SIGCONT), a broker that is not running (started with the node's own start
command) — and records that it fired. Disarming (after the final heal) removes the lease's
directory; the watchdog sees it gone and exits.

The directory is made by ``mktemp -d`` (fresh, private, unpredictable), so nothing anyone
else planted is written through. A switch that fired while the run lived (its SSH was cut
for longer than the deadline) is reported at disarm, so the history says when the node was
really healed.

:func:`sweep_node` is ``kafka-chaos sweep --nodes`` and runs at every start against those
nodes: it runs the same undo on a node where no live switch (a lease younger than its
deadline with its watchdog running) says another run is at work.

A node that is a container on this machine's engine has its faults made through this host,
so its watchdog runs here (:mod:`nemesis.dead_man_containers`); :class:`DeadManSwitches`
and :func:`sweep_spec` take both kinds of node.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from compose.node import ContainerNode
from compose.nodes_file import RemoteNodeSpec
from compose.remote import SshNode
from compose.ssh import SshError
from contract.owners import host_identity
from nemesis.net.iptables import CHAIN_INPUT, CHAIN_OUTPUT, TAG_PREFIX
from nemesis.net.tc import ROOT_HANDLE

log = logging.getLogger("kafka_chaos.dead_man")
DEFAULT_DEADLINE_S = 60.0
SWITCH_PREFIX = "/tmp/kafka-chaos-dead-man."

# The undo, as a shell function; $pattern and $start are set by the caller. Every step may
# fail (a tool missing, a chain already gone) without stopping the others.
_UNDO = f"""
undo() {{
  for t in iptables ip6tables; do
    command -v $t >/dev/null 2>&1 || continue
    for pair in {CHAIN_INPUT}:INPUT {CHAIN_OUTPUT}:OUTPUT; do
      chain=${{pair%%:*}}; hook=${{pair##*:}}
      $t -w 10 -S $chain >/dev/null 2>&1 || continue
      n=0
      while [ $n -lt 10 ] && $t -w 10 -D $hook -m comment --comment {TAG_PREFIX} \\
          -j $chain 2>/dev/null; do n=$((n+1)); done
      $t -w 10 -F $chain 2>/dev/null; $t -w 10 -X $chain 2>/dev/null
      echo "removed $t chain $chain"
    done
  done
  if command -v tc >/dev/null 2>&1; then
    for dev in $(ls /sys/class/net); do
      if tc qdisc show dev "$dev" root 2>/dev/null | grep -q ' {ROOT_HANDLE} root'; then
        tc qdisc del dev "$dev" root && echo "removed qdisc on $dev"
      fi
    done
  fi
  pid=$(pgrep -o -f "$pattern")
  if [ -n "$pid" ]; then
    case "$(ps -o stat= -p "$pid")" in T*) kill -s CONT "$pid" && echo "resumed $pid";; esac
  elif [ "$restart" = 1 ]; then
    setsid sh -c "$start" </dev/null >/dev/null 2>&1 &
    echo "started the broker"
  fi
}}
"""

# The watchdog: $1 the switch directory, $2 the deadline in seconds.
_WATCHDOG = _UNDO + """
dir=$1; deadline=$2
while [ -d "$dir" ]; do
  lease=$(stat -c %Y "$dir/lease" 2>/dev/null) || exit 0
  if [ $(( $(date +%s) - lease )) -ge "$deadline" ]; then
    restart=1
    undo > "$dir/undo.log" 2>&1
    date +%s > "$dir/fired"
    exit 0
  fi
  sleep 1
done
"""


def _node_vars(node: SshNode, restart: bool) -> str:
    return (f"pattern={shlex.quote(node.pgrep_pattern())}; start={shlex.quote(node.spec.start)}; "
            f"restart={int(restart)}\n")


@dataclass
class Fired:
    """A switch that undid its node by itself: when (node clock, epoch seconds) and what."""

    node_id: int
    at: int
    undo: list[str] = field(default_factory=list)


def fired_of(node_id: int, lines: list[str]) -> Fired | None:
    """What a switch recorded: its ``fired`` file's time, then its undo log's lines; None
    when it did not fire."""
    if not lines or not lines[0].strip().isdigit():
        return None
    return Fired(node_id, int(lines[0]), [ln for ln in lines[1:] if ln.strip()])


class Guard(Protocol):
    """One armed switch, whatever runs its watchdog (the node over SSH, or this host)."""

    @property
    def node_id(self) -> int:
        """The node it guards."""

    def renew(self) -> None:
        """Makes the lease fresh; raises (SshError, OSError) when it cannot."""

    def disarm(self) -> Fired | None:
        """Removes the switch; what it did if it had fired."""


@dataclass
class Switch:
    """One armed watchdog on a node reached over SSH: the node and its switch directory."""

    node: SshNode
    path: str

    @property
    def node_id(self) -> int:
        return self.node.node_id

    def renew(self) -> None:
        renew(self)

    def disarm(self) -> Fired | None:
        return disarm(self)


def arm(node: SshNode, owner: str, deadline_s: float) -> Switch:
    """Starts ``node``'s watchdog; its lease is fresh. Raises SshError when it cannot."""
    script = (
        f"d=$(mktemp -d {SWITCH_PREFIX}XXXXXXXX) || exit 1\n"
        f"printf '%s\\n' {shlex.quote(owner)} > \"$d/owner\" || exit 1\n"
        f"echo {int(deadline_s)} > \"$d/deadline\" && touch \"$d/lease\" || exit 1\n"
        f"setsid sh -c {shlex.quote(_node_vars(node, True) + _WATCHDOG)} kafka-chaos-dead-man "
        f"\"$d\" {int(deadline_s)} </dev/null >/dev/null 2>&1 &\n"
        "echo \"$d\"\n")
    out = node.ssh.run(script, timeout=30).stdout.strip()
    if not out.startswith(SWITCH_PREFIX):
        raise SshError(f"node {node.node_id}: the dead-man switch did not arm ({out[:80]!r})")
    return Switch(node, out)


def renew(switch: Switch) -> None:
    """Touches the lease (raises SshError when the node cannot be reached)."""
    switch.node.ssh.run(f"touch {shlex.quote(switch.path)}/lease", timeout=15)


def disarm(switch: Switch) -> Fired | None:
    """Removes the switch; what it did if it had fired meanwhile."""
    q = shlex.quote(switch.path)
    out = switch.node.ssh.run(
        f"cat {q}/fired 2>/dev/null && cat {q}/undo.log 2>/dev/null; rm -rf {q}",
        timeout=30, check=False).stdout.split("\n")
    return fired_of(switch.node.node_id, out)


class DeadManSwitches:
    """The switches of one run: armed on every node (over SSH, or on this host for a
    container), their leases renewed from a thread until :meth:`disarm_all`."""

    def __init__(self, nodes: Sequence[SshNode | ContainerNode], run_id: str,
                 deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        self.nodes = nodes
        self.deadline_s = deadline_s
        self.owner = f"{host_identity()} {os.getpid()} {run_id}"
        self.switches: list[Guard] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def arm_all(self) -> None:
        """Arms every node (raises on the first that cannot be: no fault may run unguarded)."""
        from nemesis import dead_man_containers  # it builds on this module

        for node in self.nodes:
            if isinstance(node, SshNode):
                self.switches.append(arm(node, self.owner, self.deadline_s))
            else:
                self.switches.append(dead_man_containers.arm(node, self.owner, self.deadline_s))
        self._thread = threading.Thread(target=self._renew_loop, daemon=True,
                                        name="kafka-chaos-dead-man")
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.deadline_s / 4):
            for s in self.switches:
                try:
                    s.renew()
                except (SshError, OSError) as e:  # the switch fires if this goes on: its job
                    log.warning("node %s: lease not renewed: %s", s.node_id, e)

    def disarm_all(self) -> tuple[list[Fired], list[str]]:
        """Stops renewing and removes every switch; the ones that had fired, and the nodes
        that could not be reached (their switch fires by itself at the deadline)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        fired: list[Fired] = []
        errors: list[str] = []
        for s in self.switches:
            try:
                if (f := s.disarm()) is not None:
                    fired.append(f)
            except (SshError, OSError) as e:
                errors.append(f"node {s.node_id}: not disarmed ({e}); its switch undoes "
                              f"the node by itself within {self.deadline_s:.0f}s")
        self.switches.clear()
        return fired, errors


# A listing of the node's switches: one line each, "<dir> <lease age s> <deadline s>
# <watchdog runs 0/1> <fired 0/1> <owner...>"; only directories (not links) of the user we
# log in as.
_LIST = f"""
now=$(date +%s)
for d in {SWITCH_PREFIX}*; do
  [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || continue
  lease=$(stat -c %Y "$d/lease" 2>/dev/null || echo 0)
  if pgrep -f "[k]afka-chaos-dead-man $d" >/dev/null; then w=1; else w=0; fi
  if [ -e "$d/fired" ]; then f=1; else f=0; fi
  dl=$(head -c 12 "$d/deadline" 2>/dev/null | tr -cd 0-9)
  owner=$(head -c 200 "$d/owner" 2>/dev/null)
  echo "$d $((now - lease)) ${{dl:-{int(DEFAULT_DEADLINE_S)}}} $w $f $owner"
done
"""


@dataclass
class NodeSweep:
    """What :func:`sweep_node` found and did on one node."""

    node_id: int
    live: list[str] = field(default_factory=list)  # other runs' switches, left alone
    removed_switches: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the terminal."""
        if self.live:
            return (f"node {self.node_id}: left alone, a live run's switch is armed "
                    f"({', '.join(self.live)})")
        done = self.undo + [f"removed switch {p}" for p in self.removed_switches]
        return f"node {self.node_id}: " + ("; ".join(done) if done else "nothing of ours")


def sweep_node(node: SshNode) -> NodeSweep:
    """Undoes every fault of ours on ``node`` unless a live switch says a run is at work;
    removes dead switches. A broker that is not running is started only when a dead switch
    of ours shows a run was faulting the node (otherwise its owner may have stopped it)."""
    report = NodeSweep(node.node_id)
    dead: list[str] = []
    for line in node.ssh.run(_LIST, timeout=30).stdout.splitlines():
        parts = line.split(" ", 5)
        if len(parts) < 5 or not parts[1].lstrip("-").isdigit() or not parts[2].isdigit():
            continue
        path, age, deadline = parts[0], int(parts[1]), int(parts[2])
        watching, fired = parts[3] == "1", parts[4] == "1"
        if watching and not fired and age < deadline:
            report.live.append(path)
        else:
            dead.append(path)
    if report.live:
        return report
    out = node.ssh.run(_node_vars(node, bool(dead)) + _UNDO + "undo\n", timeout=60,
                       check=False).stdout
    report.undo = [ln for ln in out.splitlines() if ln.strip()]
    if dead:
        node.ssh.run("rm -rf " + " ".join(shlex.quote(p) for p in dead), timeout=30,
                     check=False)
        report.removed_switches = dead
    return report


def sweep_spec(spec: RemoteNodeSpec) -> NodeSweep:
    """:func:`sweep_node` for a node of nodes.toml reached over SSH (its connection is left
    open, for the caller to reuse or close), the container sweep for a container on this
    engine (by name: one a dead run killed has no address to look up)."""
    if spec.container is None:
        return sweep_node(SshNode(spec))
    from nemesis.dead_man_containers import sweep_container  # it builds on this module

    return sweep_container(spec.node_id, spec.container)
