"""Resources owned by a process: a cluster's containers carry the owner's pid as a label
(compose.cleanup), scratch directories carry it in their name. When the owner is gone (a
SIGKILL leaves no chance to clean up) the next start of any kafka-chaos process removes
them; a live owner's are never touched.

Directory names: ``<temp dir>/kafka-chaos-<kind>-<pid>-<random>``. The pid in the name says
whose it is; what proves the owner alive is the lock on the directory's :data:`LOCK_FILE`,
which the owner takes (``flock``) before the directory appears under that name and holds
until it ends. The kernel drops it when the owner ends, however it ends, so a sweep that can
take the lock knows the owner is gone, whatever pid namespace either of them runs in and
whichever process has that pid now. (Judged by the pid alone, a live owner in another pid
namespace sharing the temp dir, such as a container with the host's /tmp, looked dead.)
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

#: The file in each owned directory whose lock its owner holds while it lives.
LOCK_FILE = ".owner.lock"

_HELD_LOCK = threading.Lock()
#: Directory -> the descriptor holding its lock (closed once the owner removed it).
_HELD: dict[Path, int] = {}


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
    """A new directory under the temp dir owned by this process, locked for as long as it
    lives (removed by the caller when done; by :func:`sweep_owned_dirs` of a later process
    if this one is killed).

    It is made under a name no sweep looks at and renamed once its lock is held, so no
    sweep ever sees it unlocked while its owner lives."""
    final_prefix = _prefix(kind, os.getpid())
    staging = Path(tempfile.mkdtemp(prefix="." + final_prefix))
    fd = os.open(staging / LOCK_FILE, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else holds it
    path = staging.with_name(staging.name[1:])
    os.rename(staging, path)
    with _HELD_LOCK:
        for done in [p for p in _HELD if not p.exists()]:  # removed by their callers
            os.close(_HELD.pop(done))
        _HELD[path] = fd
    return path


def owner_lock_fd(path: Path) -> int:
    """The descriptor holding the lock of this process's owned directory ``path``: passed
    to a child (``pass_fds``), it keeps the directory owned for as long as the child lives,
    whenever this process ends."""
    with _HELD_LOCK:
        return _HELD[path]


def _owner_gone(path: Path, pid: int) -> bool:
    """Whether the owner of the owned directory ``path`` (named after ``pid``) has ended:
    its lock can be taken. A directory without a lock file was made before the lock
    existed and has only its pid to go by; one whose lock this process may not open is
    another user's, and stays."""
    try:
        return not lock_taken(path / LOCK_FILE)
    except FileNotFoundError:
        return pid != os.getpid() and not pid_alive(pid)
    except OSError:
        return False


def lock_taken(path: Path) -> bool:
    """Whether a live process holds the flock of the file ``path`` (or another prober
    does at this instant). Raises OSError when the file cannot be opened
    (FileNotFoundError when there is none); a link is not followed."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                 | os.O_CLOEXEC)  # (a planted FIFO would block a plain open)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its holder lives
        return True
    finally:
        os.close(fd)
    return False


def _remove_tree(path: Path) -> bool:
    shutil.rmtree(path, ignore_errors=True)
    return True


def sweep_owned_dirs(kind: str, root: str | None = None,
                     remove: Callable[[Path], bool] = _remove_tree) -> list[Path]:
    """Remove the ``kind`` directories under the temp dir (or ``root``) whose owning
    process is gone (its lock is free), each with ``remove`` (which says whether it did);
    the removed paths."""
    base = Path(root or tempfile.gettempdir())
    pattern = re.compile(rf"^kafka-chaos-{re.escape(kind)}-(\d+)-")
    removed: list[Path] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if (m is None or entry.is_symlink() or not entry.is_dir()
                or not _owner_gone(entry, int(m.group(1)))):
            continue
        if remove(entry):
            removed.append(entry)
    return removed
