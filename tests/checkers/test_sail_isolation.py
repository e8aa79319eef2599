"""No other local user can reach the checker's Sail engine, and it ends with the checker.

Spark Connect has no authentication: a server on 127.0.0.1 runs any local user's queries as
the user who started it (as root, on a shared CI runner or a team's bastion, anyone's). The
server listens only in a network namespace of its own; the checker reaches it through a Unix
socket in its private scratch. Probed as user ``nobody`` with the system Python (the
project's venv may sit under a directory nobody can enter).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from contract.owners import sweep_owned_dirs

ROOT = Path(__file__).resolve().parents[2]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c"]

CHECKER = """
import os, sys
from checkers.engines import sail_session
assert sail_session().range(5).count() == 5
print(os.getpid(), flush=True)
sys.stdin.read()
"""


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, read from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _listening_ports(pids: list[int]) -> list[int]:
    """TCP ports these processes listen on in this (the host's) network namespace."""
    inodes = set()
    for pid in pids:
        with_fds = Path(f"/proc/{pid}/fd")
        for fd in with_fds.iterdir() if with_fds.exists() else []:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                ports.append(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def _as_nobody(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, code], capture_output=True, text=True, timeout=30)


def test_no_other_local_user_reaches_the_sail_server_and_it_ends_with_the_checker() -> None:
    assert os.geteuid() == 0, "this test acts as another local user: run it as root (CI does)"
    proc = subprocess.Popen([sys.executable, "-c", CHECKER], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())  # the owner's query ran
        tree = _tree(pid)
        ports = _listening_ports(tree)
        reached = [p for p in ports if _as_nobody(
            f"import socket; socket.create_connection(('127.0.0.1', {p}), 5)").returncode == 0]
        assert not ports, f"the checker's processes listen on TCP {ports}; nobody reached {reached}"
        assert len(tree) > 1, "the server runs in a child of the checker"
        socks = list(Path(tempfile.gettempdir()).glob(f"kafka-chaos-sail-{pid}-*/sail.sock"))
        assert len(socks) == 1, socks
        probe = _as_nobody(
            f"import socket; socket.socket(socket.AF_UNIX).connect({str(socks[0])!r})")
        assert probe.returncode != 0 and "PermissionError" in probe.stderr, probe
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no exit handler runs: the server must go by itself
        proc.wait()

    @retry(retry=retry_if_result(bool), stop=stop_after_delay(30), wait=wait_fixed(0.2),
           retry_error_callback=lambda s: s.outcome.result())  # type: ignore[union-attr]
    def left() -> list[int]:
        return [p for p in tree[1:] if Path(f"/proc/{p}").exists()
                and "Z" not in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1][:3]]

    assert left() == [], "Sail's server outlived its checker"
    # its scratch stays for the next sweep (no exit handler ran); that sweep may take it now
    scratch = [s.parent for s in socks]
    assert set(scratch) <= set(sweep_owned_dirs("sail")), scratch
    assert not any(d.exists() for d in scratch)


def test_without_a_private_network_namespace_sail_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    cli = Path(sys.executable).with_name("kafka-chaos")
    # no unshare on PATH: no namespace can be made, and Sail would listen where anyone reaches
    out = subprocess.run([str(cli), "check", str(tmp_path), "--spark-master", "sail"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PATH=str(tmp_path)))
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "private network namespace" in lines[0], out.stderr
    assert not (tmp_path / "results.json").exists()
