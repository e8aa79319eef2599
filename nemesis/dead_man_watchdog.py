"""The watchdog of a container node's dead-man switch: ``python -m nemesis.dead_man_watchdog
DIR``, a detached process on this host (nemesis.dead_man_containers arms it).

It forks at once and the parent exits, so the watchdog is no child of the run (a new
session: no signal meant for the run's process group reaches it). It holds the flock of
``DIR/watchdog.lock`` while it lives (a sweep that can take the lock knows it is gone),
checks once a second how old ``DIR/lease`` is, and exits when the lease is gone (the
switch was disarmed). When the lease is as old as the deadline it undoes everything of ours
on its container (:func:`undo_container`), writes what it did to ``DIR/undo.log`` and the
time (epoch seconds) to ``DIR/fired``, and exits.

Only the standard library is imported up front: the watchdog waits for minutes beside every
run, and only the undo needs the Docker client and the network tools.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from pathlib import Path

LEASE = "lease"
TARGET = "switch.json"  # {"node_id", "container_id", "name", "deadline_s", "owner"}
LOCK = "watchdog.lock"
FIRED = "fired"
UNDO_LOG = "undo.log"
CHECK_EVERY_S = 1.0
#: The module a watchdog runs: in its command line, what finds it (MARK).
MODULE = "nemesis.dead_man_watchdog"
MARK = MODULE.encode()


def write_private(path: Path, text: str) -> None:
    """Writes a new file in a switch directory; never through a link (none is ours)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def undo_container(ref: str, restart: bool) -> list[str]:
    """Undoes what a run may have left on the container ``ref`` (id or name): our iptables
    chains (both families), tc root qdiscs and delayers in its network namespace, the
    freeze of a pause, and, with ``restart``, a stop or kill (the container is started).
    Every step is tried whatever the others did; one line per thing done or failed."""
    import docker

    from nemesis.net.netns import CommandFailed, NamespaceGone, NetNS
    from nemesis.net.sweep import sweep

    try:
        container = docker.from_env().containers.get(ref)
    except docker.errors.NotFound:
        return [f"no container {ref}"]
    state = container.attrs.get("State") or {}
    done: list[str] = []
    pid = int(state.get("Pid") or 0)
    if pid:  # a stopped container's namespace went, with our rules and qdiscs in it
        try:
            swept = sweep(NetNS.from_pid(pid))
            if swept.rules:
                done.append(f"removed our iptables chains ({swept.rules} rules)")
            done += [f"removed qdisc on {dev}" for dev in swept.qdiscs]
            done += [f"stopped delayer {p}" for p in swept.delayers]
        except (NamespaceGone, CommandFailed) as e:
            done.append(f"network not swept: {e}")
    try:
        if state.get("Paused"):
            container.unpause()
            done.append("unpaused")
        elif restart and not state.get("Running"):
            container.start()
            done.append("started the container")
    except docker.errors.APIError as e:
        done.append(f"failed: {e.explanation or e}")
    return done


def watch(switch: Path) -> int:
    """The watchdog's loop (see the module docstring)."""
    lock = os.open(switch / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # held until this process ends, however it ends
    target = json.loads((switch / TARGET).read_text())
    tick = threading.Event()  # never set: its wait is the pause between two looks
    while True:
        try:
            age = time.time() - os.stat(switch / LEASE).st_mtime
        except FileNotFoundError:
            return 0  # disarmed
        if age >= float(target["deadline_s"]):
            break
        tick.wait(CHECK_EVERY_S)
    try:
        lines = undo_container(target["container_id"], restart=True)
    except Exception as e:  # noqa: BLE001 - no one reads our stderr: the record says it
        lines = [f"failed: {type(e).__name__}: {e}"]
    with contextlib.suppress(FileNotFoundError):  # disarmed (or swept) meanwhile
        write_private(switch / UNDO_LOG, "".join(f"{ln}\n" for ln in lines))
        write_private(switch / FIRED, f"{int(time.time())}\n")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m nemesis.dead_man_watchdog SWITCH_DIR", file=sys.stderr)
        return 2
    if os.fork():  # the parent exits now: the run that started it waits for that alone
        os._exit(0)
    return watch(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
