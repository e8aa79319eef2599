"""Commands on a node over SSH, with the system's OpenSSH client (Jepsen's model: an address,
a user and a key per node; nothing installed on the node but a shell, ``kill``, ``pgrep``).

One master connection per node is shared by every command (``ControlMaster``): a fault is a
handful of commands, and a fresh handshake each time would add a quarter second to each.
The master lives in a private directory of this process and is closed by :meth:`close`; it
also exits by itself shortly after its last use, so a killed run leaves no ssh behind for
long.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contract.owners import owned_dir, sweep_owned_dirs

#: ssh exits 255 when the connection (not the remote command) failed.
SSH_CONNECTION_FAILED = 255
_CONTROL_DIR: str | None = None


class SshError(RuntimeError):
    """A node could not be reached over SSH, or a command on it failed; one line."""


class SshUnreachable(SshError):
    """The connection failed or did not answer in time (not the remote command)."""


def _control_dir() -> str:
    """This process's directory for master sockets (removed when the process exits)."""
    global _CONTROL_DIR
    if _CONTROL_DIR is None or not os.path.isdir(_CONTROL_DIR):
        sweep_owned_dirs("ssh")  # a SIGKILLed run's (its masters exit by themselves)
        _CONTROL_DIR = str(owned_dir("ssh"))
        atexit.register(shutil.rmtree, _CONTROL_DIR, True)
    return _CONTROL_DIR


@dataclass(frozen=True)
class SshTarget:
    """Where and as whom to log in to one node."""

    host: str
    user: str = "root"
    port: int = 22
    key: str | None = None  # private key file; None: the ssh agent / default keys
    known_hosts: str | None = None  # None: ~/.ssh/known_hosts
    connect_timeout_s: int = 5

    @property
    def known_hosts_file(self) -> Path:
        """The known_hosts file that must hold this node's host key."""
        return Path(self.known_hosts or "~/.ssh/known_hosts").expanduser()

    def host_key_known(self) -> bool:
        """Whether :attr:`known_hosts_file` holds a key for this host and port (hashed
        entries too: ``ssh-keygen -F``)."""
        name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        path = self.known_hosts_file
        if not path.is_file():
            return False
        proc = subprocess.run(["ssh-keygen", "-F", name, "-f", str(path)],
                              capture_output=True, timeout=10, check=False)
        return proc.returncode == 0 and bool(proc.stdout.strip())

    def argv(self) -> tuple[str, ...]:
        """The ssh command line up to (not including) the remote command. Host keys are
        checked strictly: a host whose key is not already known is never trusted on first
        use (on a fresh CI runner that would be every time)."""
        opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}",
                "-o", "StrictHostKeyChecking=yes",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                "-o", "ControlMaster=auto", "-o", "ControlPersist=20",
                "-o", f"ControlPath={_control_dir()}/%C", "-o", "LogLevel=ERROR"]
        if self.known_hosts:
            opts += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.key:
            opts += ["-i", str(Path(self.key).expanduser()), "-o", "IdentitiesOnly=yes"]
        return ("ssh", *opts, "-p", str(self.port), f"{self.user}@{self.host}", "--")

    def run(self, cmd: str | Sequence[str], *, input: str | bytes | None = None,
            timeout: float = 60, check: bool = True,
            binary: bool = False) -> subprocess.CompletedProcess:
        """Runs ``cmd`` (a shell string, or argv that is quoted for the remote shell).

        Raises :class:`SshError` when the node cannot be reached, and when ``check`` and the
        command exits non-zero."""
        remote = cmd if isinstance(cmd, str) else shlex.join(cmd)
        data = input.encode() if isinstance(input, str) and binary else input
        try:
            proc = subprocess.run([*self.argv(), remote], input=data, capture_output=True,
                                  timeout=timeout, check=False, text=not binary)
        except subprocess.TimeoutExpired as e:
            raise SshUnreachable(f"{self}: {remote[:80]!r} did not finish in {timeout:.0f}s") from e
        if proc.returncode == SSH_CONNECTION_FAILED:
            err = proc.stderr.decode(errors="replace") if binary else proc.stderr
            raise SshUnreachable(f"{self}: ssh failed: {err.strip().splitlines()[-1:] or ['?']}")
        if check and proc.returncode != 0:
            err = proc.stderr.decode(errors="replace") if binary else proc.stderr
            raise SshError(f"{self}: {remote[:80]!r} exited {proc.returncode}: "
                           f"{err.strip()[:200]}")
        return proc

    def close(self) -> None:
        """Ends the shared master connection (harmless when there is none)."""
        subprocess.run([*self.argv()[:-2], "-O", "exit", f"{self.user}@{self.host}"],
                       capture_output=True, timeout=10, check=False)

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"
