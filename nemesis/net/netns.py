"""A handle on one network namespace: run commands inside it from the host.

The broker image (like the official ``apache/kafka`` image) has no iptables or tc, so every
network fault is applied from outside: we enter the container's network namespace with
``nsenter -t <pid> -n`` (only the network namespace: the host's binaries and files stay
visible) or, for test hosts, ``ip netns exec <name>``.

A handle remembers the namespace's identity (the inode of ``/proc/<pid>/ns/net`` or of
``/run/netns/<name>``) when it is made. A container that restarts gets a new namespace and
its old pid may be reused by an unrelated process, so every command first checks that the
identity is unchanged and raises :class:`NamespaceGone` otherwise: we never touch a
namespace we did not mean.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from compose.ssh import SSH_CONNECTION_FAILED, SshUnreachable

NETNS_RUN_DIR = "/run/netns"
DEFAULT_TIMEOUT_S = 30.0


class NamespaceGone(RuntimeError):
    """The namespace this handle named no longer exists (container restarted, netns deleted)."""


class CommandFailed(RuntimeError):
    """A command run inside a namespace exited non-zero."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        detail = stderr.strip() or stdout.strip()
        super().__init__(f"{' '.join(args)!r} exited {returncode}: {detail}")
        self.cmd = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def _inode_of(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


@dataclass(frozen=True)
class NetNS:
    """A network namespace we can run commands in.

    Build one with :meth:`from_pid`, :meth:`from_container`, :meth:`named` or :meth:`current`.
    """

    kind: Literal["pid", "named", "current", "ssh"]
    ref: str
    inode: int | None = field(default=None, compare=False)
    #: ssh only: the ssh command line up to the remote command, and the SSH port that must
    #: keep working from this host (partitions that cut this host from the node spare it).
    via: tuple[str, ...] = ()
    control_port: int | None = None

    @classmethod
    def from_pid(cls, pid: int) -> NetNS:
        """The namespace of process ``pid`` (e.g. a container's init), entered with nsenter."""
        inode = _inode_of(f"/proc/{pid}/ns/net")
        if inode is None:
            raise NamespaceGone(f"process {pid} does not exist")
        return cls("pid", str(pid), inode)

    @classmethod
    def named(cls, name: str) -> NetNS:
        """A namespace made with ``ip netns add <name>``, entered with ``ip netns exec``."""
        inode = _inode_of(os.path.join(NETNS_RUN_DIR, name))
        if inode is None:
            raise NamespaceGone(f"no network namespace named {name!r}")
        return cls("named", name, inode)

    @classmethod
    def current(cls) -> NetNS:
        """The namespace this process runs in (commands run directly, no nsenter)."""
        return cls("current", "self", _inode_of("/proc/self/ns/net"))

    @classmethod
    def over_ssh(cls, name: str, argv: tuple[str, ...], control_port: int) -> NetNS:
        """A remote host's own namespace, reached with the ssh command line ``argv``
        (ending in ``--``). It outlives the broker: rules stay across broker restarts."""
        return cls("ssh", name, None, tuple(argv), control_port)

    @classmethod
    def from_container(cls, container: str) -> NetNS:
        """The namespace of a running Docker container, by id or name (via ``docker inspect``)."""
        out = subprocess.run(
            ["docker", "inspect", "--format", "{{json .State}}", container],
            capture_output=True, text=True, timeout=DEFAULT_TIMEOUT_S, check=False,
        )
        if out.returncode != 0:
            raise NamespaceGone(f"docker inspect {container}: {out.stderr.strip()}")
        state = json.loads(out.stdout)
        if not state.get("Running") or not state.get("Pid"):
            raise NamespaceGone(f"container {container} is not running")
        return cls.from_pid(int(state["Pid"]))

    # -- identity -------------------------------------------------------------------------

    def _path(self) -> str:
        if self.kind == "ssh":  # a local lock file stands in for the remote namespace
            locks = os.path.join(tempfile.gettempdir(), f"kc-netlocks-{os.getuid()}")
            os.makedirs(locks, exist_ok=True)
            return os.path.join(locks, self.ref.replace("/", "_"))
        if self.kind == "pid":
            return f"/proc/{self.ref}/ns/net"
        if self.kind == "named":
            return os.path.join(NETNS_RUN_DIR, self.ref)
        return "/proc/self/ns/net"

    def exists(self) -> bool:
        """True while the namespace this handle was made for is still there."""
        if self.kind == "ssh":
            return True  # a host does not go away with its broker; ssh errors say the rest
        inode = _inode_of(self._path())
        return inode is not None and (self.inode is None or inode == self.inode)

    def open(self) -> int:
        """An O_RDONLY fd on the namespace itself (e.g. to flock: every path to one namespace
        leads to the same nsfs inode, so all users of it share the lock)."""
        flags = os.O_RDONLY | os.O_CLOEXEC | (os.O_CREAT if self.kind == "ssh" else 0)
        try:
            fd = os.open(self._path(), flags, 0o600)
        except OSError as exc:
            raise NamespaceGone(f"namespace {self} is gone") from exc
        if self.inode is not None and os.fstat(fd).st_ino != self.inode:
            os.close(fd)
            raise NamespaceGone(f"namespace {self} was replaced")
        return fd

    def prefix(self) -> list[str]:
        """The argv prefix that runs a command inside this namespace."""
        if self.kind == "pid":
            return ["nsenter", "-t", self.ref, "-n", "--"]
        if self.kind == "named":
            return ["ip", "netns", "exec", self.ref]
        if self.kind == "ssh":
            return list(self.via)
        return []

    def argv(self, args: Sequence[str]) -> list[str]:
        """The full command line that runs ``args`` inside the namespace (over ssh the
        remote shell parses it, so it is quoted into one word)."""
        if self.kind == "ssh":
            return [*self.via, shlex.join(args)]
        return [*self.prefix(), *args]

    def describe(self) -> dict[str, Any]:
        """A JSON-able description (for events.jsonl details)."""
        return {"kind": self.kind, "ref": self.ref, "inode": self.inode}

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref}"

    # -- running commands -----------------------------------------------------------------

    def run(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``args`` inside the namespace; raise :class:`CommandFailed` if check and rc != 0.

        Raises :class:`NamespaceGone` if the namespace vanished (checked before and, when the
        command fails, after: a failure caused by the namespace vanishing mid-way is reported
        as that). Over SSH, a connection that failed (ssh's own exit 255) or did not answer
        in time raises :class:`~compose.ssh.SshUnreachable` even with ``check=False``: a
        listing that could not be read is not an empty one, and a heal that took it for one
        would read "healed" while its rules stayed on the node.
        """
        if not self.exists():
            raise NamespaceGone(f"namespace {self} is gone")
        try:
            proc = subprocess.run(
                self.argv(args), capture_output=True, text=True, input=input,
                timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired as e:
            if self.kind != "ssh":
                raise
            raise SshUnreachable(f"{self}: unreachable over SSH: {args[0]} did not finish in "
                                 f"{timeout:.0f}s") from e
        if self.kind == "ssh" and proc.returncode == SSH_CONNECTION_FAILED:
            last = proc.stderr.strip().splitlines()[-1:] or ["?"]
            raise SshUnreachable(f"{self}: unreachable over SSH ({args[0]} not run): {last[0]}")
        if proc.returncode != 0:
            if not self.exists():
                raise NamespaceGone(f"namespace {self} vanished while running {args[0]}")
            if check:
                raise CommandFailed(args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def popen(self, args: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``args`` inside the namespace (nsenter/ip netns exec exec() the command, so
        the returned pid is the command's own)."""
        if not self.exists():
            raise NamespaceGone(f"namespace {self} is gone")
        return subprocess.Popen(self.argv(args), **kwargs)

    def pids(self) -> list[int]:
        """Pids of every process whose network namespace is this one."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and _inode_of(f"/proc/{entry}/ns/net") == self.inode:
                found.append(int(entry))
        return found

    def interfaces(self) -> list[str]:
        """Names of the non-loopback interfaces that are up."""
        links = json.loads(self.run(["ip", "-j", "link", "show"]).stdout or "[]")
        return [
            link["ifname"] for link in links
            if link["ifname"] != "lo" and "UP" in link.get("flags", [])
        ]
