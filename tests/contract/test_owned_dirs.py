"""Owned scratch directories (contract/owners.py): a sweep removes a directory only when its
owner has ended, which the owner's lock proves, not the pid in the directory's name (a pid
means a process only in its own pid namespace, and only until it is reused)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract import owners
from contract.owners import LOCK_FILE, owned_dir, pid_alive, sweep_owned_dirs

ROOT = Path(__file__).resolve().parents[2]

#: A process that makes a directory of ``kind`` under its temp dir, says where, and lives
#: until its stdin closes.
_OWNER = ("import sys; from contract.owners import owned_dir; "
          "print(owned_dir(sys.argv[1]), flush=True); sys.stdin.read()")


def _owner(argv: list[str], tmp: Path, kind: str = "spark") -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([*argv, sys.executable, "-c", _OWNER, kind], cwd=ROOT,
                            env={**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    assert line, "the owner made no directory"
    return proc, Path(line)


@pytest.fixture
def owners_here(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:  # an owner ends when its stdin closes
        p.stdin.close()  # type: ignore[union-attr]
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


def _dead_pid() -> int:
    """A pid no process of this namespace has, below pid_max."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(top - 2, top // 2, -1) if not pid_alive(p))


def test_a_live_owner_in_another_pid_namespace_keeps_its_directory(
        tmp_path: Path, owners_here: list[subprocess.Popen[str]]) -> None:
    # The owner runs in a pid namespace of its own (a container sharing the temp dir): its
    # directory carries a pid that, here, no process has. The pid rule removed it live.
    assert os.geteuid() == 0, "a pid namespace of its own needs root (the suite runs as root)"
    pid = _dead_pid()
    # the owner is forked (not exec'd: sh is that namespace's pid 1) right after the next
    # pid is set
    unshare = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
               f'echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "$@"; exit $?', "owner"]
    proc, path = _owner(unshare, tmp_path)
    owners_here.append(proc)
    assert path.name.startswith(f"kafka-chaos-spark-{pid}-") and not pid_alive(pid)
    assert sweep_owned_dirs("spark", str(tmp_path)) == []
    assert path.is_dir() and (path / LOCK_FILE).exists()
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(timeout=30)
    assert sweep_owned_dirs("spark", str(tmp_path)) == [path]  # ended: its lock is free


def test_a_live_owner_whose_pid_looks_dead_keeps_its_directory(
        tmp_path: Path, owners_here: list[subprocess.Popen[str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The same without a namespace: whatever the pid says, the held lock wins
    proc, path = _owner([], tmp_path, "warm-up")
    owners_here.append(proc)
    monkeypatch.setattr(owners, "pid_alive", lambda pid: False)
    assert sweep_owned_dirs("warm-up", str(tmp_path)) == []
    assert path.is_dir()


def test_an_ended_owners_directory_goes_whoever_has_its_pid_now(
        tmp_path: Path, owners_here: list[subprocess.Popen[str]]) -> None:
    # SIGKILL: no exit handler removed it. Its pid is reused by a live process (here this
    # one's parent): the pid rule kept the directory for as long as that one lived.
    proc, path = _owner([], tmp_path)
    owners_here.append(proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reused = path.rename(path.with_name(f"kafka-chaos-spark-{os.getppid()}-reused"))
    assert sweep_owned_dirs("spark", str(tmp_path)) == [reused]
    assert not reused.exists()


def test_this_process_never_sweeps_its_own(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    mine = owned_dir("sail")
    assert mine.parent == tmp_path and mine.name.startswith(f"kafka-chaos-sail-{os.getpid()}-")
    assert sweep_owned_dirs("sail") == [] and mine.is_dir()
    assert not list(tmp_path.glob(".kafka-chaos-*"))  # renamed once locked: nothing staged


def test_a_directory_made_before_the_lock_goes_by_its_pid(tmp_path: Path) -> None:
    dead = tmp_path / f"kafka-chaos-spark-{_dead_pid()}-old"
    live = tmp_path / f"kafka-chaos-spark-{os.getppid()}-old"
    dead.mkdir()
    live.mkdir()
    assert sweep_owned_dirs("spark", str(tmp_path)) == [dead]
    assert live.is_dir()
