"""Resources owned by a process: a cluster's containers carry the owner's pid as a label
(compose.cleanup), scratch directories carry it in their name. When the owner is gone (a
SIGKILL leaves no chance to clean up) the next start of any kafka-chaos process removes
them; a live owner's are never touched.

Directory names: ``<temp dir>/kafka-chaos-<kind>-<pid>-<random>``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists and has not ended (a zombie has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's: alive
    return process_state(pid) != "Z"  # None: no /proc to tell, and kill(0) said it exists


def process_state(pid: int) -> str | None:
    """The state letter of ``/proc/<pid>/stat`` (R, S, T for stopped by a signal, Z for a
    zombie, ...); None when /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            # "pid (comm) state ...": comm may hold spaces and parentheses
            return fh.read().rsplit(") ", 1)[-1][:1] or None
    except OSError:
        return None


def host_identity() -> str:
    """This process's boot and pid namespace (``<boot id>/<pid namespace>``): a pid means a
    process only within them. A Docker engine shared with another host or another pid
    namespace (a container running kafka-chaos) holds resources whose owner pid says
    nothing here. Empty when /proc cannot tell."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{ns}"


def _prefix(kind: str, pid: int) -> str:
    return f"kafka-chaos-{kind}-{pid}-"


def owned_dir(kind: str) -> Path:
    """A new directory under the temp dir owned by this process (removed by the caller when
    done; by :func:`sweep_owned_dirs` of a later process if this one is killed)."""
    return Path(tempfile.mkdtemp(prefix=_prefix(kind, os.getpid())))


def sweep_owned_dirs(kind: str, root: str | None = None) -> list[Path]:
    """Remove the ``kind`` directories under the temp dir (or ``root``) whose owning
    process is gone; the removed paths."""
    base = Path(root or tempfile.gettempdir())
    pattern = re.compile(rf"^kafka-chaos-{re.escape(kind)}-(\d+)-")
    removed: list[Path] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if m is None or int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
