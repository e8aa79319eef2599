"""A root filesystem built by a command (debootstrap) in a scratch directory that nothing
outlives: not the command's processes, not its mounts, not the directory.

The command runs under compose/rootfs_guard.py, which ends the command's whole process
group and detaches every mount under the scratch directory when the command ends, when we
stop it (an exception here: Ctrl-C, a SIGTERM our signal guard raised) or when this process
dies without a word (SIGKILL: the guard reads EOF on its stdin). The scratch directory is
one of ours (``contract.owners``: ``kafka-chaos-rootfs-<pid>-*``) and its owner lock is
held by the guard too, so the next start's sweep removes a killed build's directory only
once the guard has cleaned up, and never deletes through a mount left in it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from contract.owners import owned_dir, owner_lock_fd, sweep_owned_dirs

from .rootfs_guard import TERM_GRACE_S, unmount_under

GUARD = Path(__file__).resolve().with_name("rootfs_guard.py")
KIND = "rootfs"


class RootfsError(RuntimeError):
    """The command that builds the root filesystem failed; the message ends with its
    output's last lines."""


def remove_rootfs(scratch: Path) -> bool:
    """Remove a scratch directory after detaching every mount under it; one that still has
    a mount is left where it is (removing it would delete through the mount)."""
    left = unmount_under(scratch)
    if left:
        print(f"[image] left {scratch}: still mounted: {' '.join(left)}", file=sys.stderr)
        return False
    shutil.rmtree(scratch, ignore_errors=True)
    return not scratch.exists()


def sweep_rootfs(root: str | None = None) -> list[Path]:
    """Remove the scratch directories (under the temp dir, or ``root``) of builds whose
    process and guard are gone."""
    return sweep_owned_dirs(KIND, root, remove=remove_rootfs)


def _stop(guard: subprocess.Popen[bytes]) -> None:
    """Ask the guard to end the command (EOF on its stdin), then make sure it is gone."""
    assert guard.stdin is not None
    with contextlib.suppress(OSError):
        guard.stdin.close()
    try:
        guard.wait(timeout=TERM_GRACE_S + 15)
    except subprocess.TimeoutExpired:
        guard.kill()
        guard.wait()


@contextlib.contextmanager
def built_rootfs(command: Callable[[Path], list[str]], what: str) -> Iterator[Path]:
    """Runs ``command(root)`` (it fills the directory ``root``) and yields ``root``; the
    whole scratch directory is gone afterwards, however this ends. Raises RootfsError when
    the command fails."""
    sweep_rootfs()
    scratch = owned_dir(KIND)
    root, log = scratch / "root", scratch / "build.log"
    try:
        lock = owner_lock_fd(scratch)
        guard = subprocess.Popen(
            [sys.executable, str(GUARD), str(scratch), str(log), "--", *command(root)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(lock,), start_new_session=True)  # no terminal signals: we stop it
        try:
            code = guard.wait()
        except BaseException:
            _stop(guard)
            raise
        if code != 0:
            lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
            if guard.stderr is not None:
                lines += guard.stderr.read().decode(errors="replace").strip().splitlines()
            raise RootfsError(f"{what} failed (exit {code}): {' | '.join(lines[-3:])}")
        for pipe in (guard.stdin, guard.stderr):
            if pipe is not None:
                pipe.close()
        yield root
    finally:
        remove_rootfs(scratch)
