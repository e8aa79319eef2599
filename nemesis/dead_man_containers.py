"""The dead-man switch on nodes that are containers on this machine's Docker engine (nodes.toml
``container = "..."``, e.g. the cluster of ``kafka-chaos cluster compose-file``).

Their faults go through this host (the engine's pause, kill and start; iptables and tc in the
container's network namespace), so their watchdogs run here: one per container, a detached
process (:mod:`nemesis.dead_man_watchdog`) that outlives the run and undoes everything of
ours on its container when the run stops renewing its lease.

:func:`arm` makes a fresh private directory (``mkdtemp``: mode 0700, a name no one can
guess) ``/tmp/kafka-chaos-dead-man-container.*`` holding what the switch guards — the
container's id (a container created again under the same name is not the one the run
faulted), its name, the deadline and the run — and the lease, starts the watchdog, and
waits (bounded) until the watchdog holds its lock. Disarming removes the lease, waits until
the watchdog has gone (it exits at its next look, or once it has finished firing), reads
whether it fired and removes the directory.

:func:`sweep_container` is what ``kafka-chaos sweep --nodes`` and the start of every run do
for a container node, by its name: the same undo unless a live switch (its watchdog holds
the lock, has not fired, its lease is younger than its deadline) guards that container.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from contract.owners import lock_taken
from nemesis.dead_man import Fired, NodeSweep, fired_of
from nemesis.dead_man_watchdog import (
    FIRED,
    LEASE,
    LOCK,
    MODULE,
    TARGET,
    UNDO_LOG,
    undo_container,
    write_private,
)

if TYPE_CHECKING:
    from compose.node import ContainerNode

log = logging.getLogger("kafka_chaos.dead_man")
SWITCH_ROOT = Path("/tmp")  # fixed, not $TMPDIR: a sweep from another shell must see them
SWITCH_PREFIX = "kafka-chaos-dead-man-container."
WATCHDOG_ERR = "watchdog.err"
ARM_TIMEOUT_S = 30.0
# A watchdog that is firing starts its container: the engine may take a while
DISARM_WAIT_S = 60.0


class SwitchError(RuntimeError):
    """A container's switch could not be armed; the message says why."""


def _read(path: Path) -> list[str]:
    """The lines of a file in a switch directory; none when it is not there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with os.fdopen(fd, errors="replace") as fh:
        return fh.read(1 << 16).splitlines()


def _watching(switch: Path) -> bool:
    """Whether the switch's watchdog is alive (holds its lock)."""
    try:
        return lock_taken(switch / LOCK)
    except OSError:
        return False


@dataclass
class ContainerSwitch:
    """One armed watchdog on this host: the node and its switch directory."""

    node_id: int
    path: Path

    def renew(self) -> None:
        """Makes the lease fresh (raises OSError when the switch is gone)."""
        os.utime(self.path / LEASE)

    def disarm(self) -> Fired | None:
        """Removes the switch once its watchdog has gone; what it did if it had fired."""
        (self.path / LEASE).unlink(missing_ok=True)  # the watchdog exits at its next look
        still = Retrying(stop=stop_after_delay(DISARM_WAIT_S), wait=wait_fixed(0.1),
                         retry=retry_if_result(bool),
                         retry_error_callback=lambda _state: True)(_watching, self.path)
        if still:
            log.warning("node %s: the dead-man watchdog of %s did not exit within %.0fs",
                        self.node_id, self.path, DISARM_WAIT_S)
        lines = _read(self.path / FIRED) + _read(self.path / UNDO_LOG)
        shutil.rmtree(self.path, ignore_errors=True)
        return fired_of(self.node_id, lines)


def _watchdog_env() -> dict[str, str]:
    """The watchdog imports nemesis from the same tree as we do, whatever its directory."""
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}


def arm(node: ContainerNode, owner: str, deadline_s: float) -> ContainerSwitch:
    """Starts ``node``'s watchdog on this host with a fresh lease; raises SwitchError (or
    the OSError) when it cannot."""
    path = Path(tempfile.mkdtemp(prefix=SWITCH_PREFIX, dir=SWITCH_ROOT))
    try:
        write_private(path / TARGET, json.dumps({
            "node_id": node.node_id, "container_id": node.container.id,
            "name": node.remote.container, "deadline_s": deadline_s, "owner": owner}))
        write_private(path / LEASE, "")
        # its first process forks the watchdog and exits: we wait for that one alone, and
        # the watchdog (in a session of its own) is no child of ours
        err = os.open(path / WATCHDOG_ERR, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o600)
        try:
            subprocess.run([sys.executable, "-m", MODULE, str(path)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                           cwd="/", env=_watchdog_env(), start_new_session=True, timeout=60,
                           check=False)
        finally:
            os.close(err)
        armed = Retrying(stop=stop_after_delay(ARM_TIMEOUT_S), wait=wait_fixed(0.05),
                         retry=retry_if_result(lambda taken: not taken),
                         retry_error_callback=lambda _state: False)(_watching, path)
        if not armed:
            why = " ".join(_read(path / WATCHDOG_ERR)[-3:]) or "no error written"
            raise SwitchError(f"node {node.node_id}: the dead-man switch did not arm within "
                              f"{ARM_TIMEOUT_S:.0f}s ({why[:300]})")
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)  # no lease: a watchdog that started exits
        raise
    return ContainerSwitch(node.node_id, path)


@dataclass(frozen=True)
class Listed:
    """A switch directory found on this host, and what its files say."""

    path: Path
    container_id: str
    name: str
    live: bool


def _listed(path: Path) -> Listed | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    # only real directories of ours: a link or another user's directory is not a switch
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return None
    try:
        target: dict[str, Any] = json.loads("\n".join(_read(path / TARGET)))
    except ValueError:
        return None  # being armed this instant (its target is written first), or not ours
    if not isinstance(target, dict):
        return None
    try:
        lease = os.stat(path / LEASE).st_mtime
    except OSError:
        lease = 0.0  # disarmed, or being removed: not live
    live = (_watching(path) and not (path / FIRED).exists()
            and time.time() - lease < float(target.get("deadline_s", 0)))
    return Listed(path, str(target.get("container_id", "")), str(target.get("name", "")),
                  live)


def listed_switches() -> list[Listed]:
    """Every container switch on this host, live or dead."""
    found = (_listed(p) for p in sorted(SWITCH_ROOT.glob(SWITCH_PREFIX + "*")))
    return [s for s in found if s is not None]


def sweep_container(node_id: int, name: str) -> NodeSweep:
    """Undoes every fault of ours on the container ``name`` unless a live switch guards it;
    removes its dead switches. By name, not through a ContainerNode: a container a dead run
    killed has no address to look up until it runs again. A stopped container is started
    only when a dead switch of ours shows a run was faulting that very container
    (otherwise its owner may have stopped it); one that no longer exists leaves only its
    switches to remove."""
    report = NodeSweep(node_id)
    try:
        cid = docker.from_env().containers.get(name).id
    except docker.errors.NotFound:
        cid = ""
    mine = [s for s in listed_switches() if s.container_id == cid or s.name == name]
    report.live = [str(s.path) for s in mine if s.live]
    if report.live:
        return report
    report.undo = undo_container(cid or name, restart=any(s.container_id == cid for s in mine))
    for s in mine:
        shutil.rmtree(s.path, ignore_errors=True)
        report.removed_switches.append(str(s.path))
    return report
