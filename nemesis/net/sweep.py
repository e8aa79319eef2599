"""Remove everything kafka-chaos left in a namespace: rules, qdiscs, delayer processes.

Used by cleanup on every exit path (normal end, failure, Ctrl-C) and by tests. It does not
need the handles that made them: it recognises our chains (``KAFKA_CHAOS_*``), our qdisc
handle (``4b43:``) and delayer processes (``nemesis.net.delayer`` in the command line) whose
network namespace is the one swept.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contract.owners import pid_alive
from nemesis.net import iptables, tc
from nemesis.net.delayer import DELAYER_DIR
from nemesis.net.netns import NamespaceGone, NetNS

DELAYER_MARK = b"nemesis.net.delayer"
KILL_AFTER_S = 5.0


@dataclass
class SweepReport:
    """What a sweep removed from one namespace."""

    ns: str
    rules: int = 0
    qdiscs: list[str] = field(default_factory=list)
    delayers: list[int] = field(default_factory=list)
    gone: bool = False

    @property
    def anything_removed(self) -> bool:
        """True when the sweep found something of ours."""
        return bool(self.rules or self.qdiscs or self.delayers)

    def describe(self) -> dict[str, Any]:
        """JSON-able."""
        return asdict(self)


def delayer_pids(ns: NetNS | None = None) -> list[int]:
    """Pids of delayer processes (only those in ``ns``'s network namespace, if given)."""
    return pids_marked(DELAYER_MARK, ns)


def pids_marked(mark: bytes, ns: NetNS | None = None) -> list[int]:
    """Pids of the processes whose command line holds ``mark`` (only those in ``ns``'s
    network namespace, if given)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if mark not in f.read():
                    continue
            if ns is not None and os.stat(f"/proc/{entry}/ns/net").st_ino != ns.inode:
                continue
        except OSError:
            continue  # it exited meanwhile
        found.append(int(entry))
    return found


def stop_delayers(pids: list[int]) -> None:
    """SIGTERM (they clean up after themselves), then SIGKILL those still alive."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_AFTER_S
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if pid_alive(pid)]
        if alive:
            time.sleep(0.05)  # polling a foreign process's exit: no handle to wait on
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def remove_stale_delayer_files() -> int:
    """Delete the log/stats files of delayers that no longer run; return how many."""
    running = set()
    for pid in delayer_pids():
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"--fault" in argv:
                running.add(argv[argv.index(b"--fault") + 1].decode())
    removed = 0
    for path in DELAYER_DIR.glob("*") if DELAYER_DIR.is_dir() else []:
        fault = path.name.split(".")[0]
        if fault not in running:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def sweep(ns: NetNS) -> SweepReport:
    """Remove every kafka-chaos rule, qdisc and delayer from ``ns``. Idempotent; a vanished
    namespace is reported as ``gone`` (it took its rules and qdiscs with it)."""
    report = SweepReport(str(ns))
    # first, and even when the handle's namespace is gone: a delayer keeps its namespace
    # alive after the container that owned it restarted (with a new namespace)
    report.delayers = delayer_pids(ns)
    stop_delayers(report.delayers)
    remove_stale_delayer_files()
    if not ns.exists():
        report.gone = True
        return report
    try:
        report.rules = iptables.remove_all(ns)
        for dev in tc.all_devices(ns):
            if tc.remove(ns, [dev]):
                report.qdiscs.append(dev)
    except NamespaceGone:
        report.gone = True
    return report
