"""Runs a root-filesystem builder (debootstrap) so that it ends with its caller, however the
caller ends, and leaves nothing mounted (run as a script by compose/rootfs.py, not imported).

debootstrap runs as root, starts children of its own (dpkg and friends inside the new root)
and mounts file systems there (``proc``, ``sys``, on some hosts ``/dev`` bound in). Killing
debootstrap alone leaves its children writing into the directory and, if its exit trap does
not run, its mounts in place: a later ``rm -r`` of the directory would then delete files
through them, the host's devices included. So this guard starts the builder in a process
group of its own and, when the builder ends or the caller goes away (EOF on our stdin: the
caller holds it open while it lives, SIGKILL included), ends that whole group and detaches
every mount under the scratch directory before it exits. The caller passes the scratch
directory's owner lock down to us, so no sweep removes the directory while we still work.

Usage: ``rootfs_guard.py SCRATCH LOG -- COMMAND...``; exits with the builder's code (143
when it was stopped). Only the standard library: it runs by path.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_MNT_DETACH = 2
#: How long the builder's group has to end after SIGTERM (its exit traps unmount) before
#: SIGKILL.
TERM_GRACE_S = 15.0


def mounts_under(path: Path) -> list[str]:
    """The mount points at or below ``path`` in this mount namespace, deepest first."""
    top = os.path.realpath(path)
    points: list[str] = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            fields = line.split(" ")
            if len(fields) < 5:
                continue
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if point == top or point.startswith(top + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


def unmount_under(path: Path) -> list[str]:
    """Detach every mount at or below ``path`` (deepest first); the points still mounted
    afterwards (empty when all went)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(3):  # a mount can hide another mounted on the same point
        points = mounts_under(path)
        if not points:
            return []
        for point in points:
            libc.umount2(os.fsencode(point), _MNT_DETACH)
    return mounts_under(path)


def _end_group(pgid: int, child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the builder's process group, then SIGKILL whatever of it is left."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            child.poll()  # reap the leader, so its group can empty
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: rootfs_guard.py SCRATCH LOG -- COMMAND...", file=sys.stderr)
        return 2
    scratch, log = Path(argv[1]), Path(argv[2])
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    def watch_caller() -> None:
        # the raw descriptor: a daemon thread blocked in sys.stdin's buffer would abort
        # the interpreter's shutdown
        while os.read(0, 4096):
            pass
        stop.set()  # EOF: the caller is gone or asked us to stop

    with open(log, "wb") as out:
        child = subprocess.Popen(argv[4:], stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, process_group=0)
    threading.Thread(target=watch_caller, daemon=True).start()
    while child.poll() is None and not stop.is_set():
        stop.wait(0.2)
    # the builder may have ended with children still running: end the group either way
    _end_group(child.pid, child)
    left = unmount_under(scratch)
    if left:
        print(f"still mounted under {scratch}: {' '.join(left)}", file=sys.stderr)
    code = child.poll()
    if stop.is_set() or code is None or code < 0:
        return 143
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
