"""An existing Kafka cluster that kafka-chaos did not start: its nodes reached over SSH.

Faults act on the broker process by its pid on the node (``kill -9``, SIGTERM, SIGSTOP and
SIGCONT) and start it again with the node's own start command; network faults and power loss
run their commands on the node (see :mod:`nemesis.faults`). The cluster is never stopped or
removed: :meth:`ExternalCluster.stop` only makes sure every listed broker runs again and
closes the SSH connections.
"""

from __future__ import annotations

import io
import ipaddress
import logging
import re
import shlex
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import docker
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from compose.admin import ClusterAdmin, ClusterError, CollectFailure, ask_active_controller
from compose.node import ContainerNode
from compose.nodes_file import RemoteNodeSpec
from compose.ssh import SshError, SshTarget

log = logging.getLogger("kafka_chaos.remote")
PREALLOCATED = ("*.index", "*.timeindex")  # Kafka rebuilds them; copies would be 10 MiB each
LOG_TAIL_BYTES = 20 << 20


class _StillThere(ClusterError):
    """The process has not (yet) done what we wait for."""


class SshNode:
    """One broker (or controller) host: the broker is a process found by its command line."""

    def __init__(self, spec: RemoteNodeSpec) -> None:
        assert spec.ssh is not None
        self.spec = self.remote = spec
        self.node_id = spec.node_id
        self.ip = spec.ip
        self.ssh: SshTarget = spec.ssh

    @property
    def client_address(self) -> str:
        return f"{self.ip}:{self.spec.client_port}"

    @property
    def controller_address(self) -> str:
        return f"{self.ip}:{self.spec.controller_port}"

    def pgrep_pattern(self) -> str:
        """The broker's ``pgrep -f`` pattern: "[k]afka.Kafka" matches the JVM but not the
        shell that runs pgrep with it."""
        p = self.spec.process
        return f"[{p[0]}]{p[1:]}"

    def pid(self) -> int:
        """The broker's pid on the node; 0 when it is not running."""
        out = self.ssh.run(f"pgrep -o -f {shlex.quote(self.pgrep_pattern())}", check=False).stdout
        return int(out.split()[0]) if out.strip() else 0

    def status(self) -> str:
        """``running``, ``paused`` (stopped by SIGSTOP) or ``exited``."""
        pid = self.pid()
        if not pid:
            return "exited"
        state = self.ssh.run(f"ps -o stat= -p {pid}", check=False).stdout.strip()
        if not state:
            return "exited"
        return "paused" if state.startswith("T") else "running"

    def _signal(self, signal: str) -> int:
        pid = self.pid()
        if pid:
            self.ssh.run(f"kill -s {signal.removeprefix('SIG')} {pid}", check=False)
        return pid

    def _alive(self, pid: int) -> bool:
        """True while ``pid`` runs; a zombie (its parent has not reaped it yet, e.g. an init
        that never waits) counts as gone."""
        state = self.ssh.run(f"ps -o stat= -p {pid}", check=False).stdout.strip()
        return bool(state) and not state.startswith("Z")

    def _wait_gone(self, pid: int, timeout_s: float) -> None:
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                                retry=retry_if_exception_type(_StillThere), reraise=True):
            with attempt:
                if self._alive(pid):
                    raise _StillThere(f"node {self.node_id}: pid {pid} still alive "
                                      f"after {timeout_s:.0f}s")

    def kill(self, signal: str = "SIGKILL") -> None:
        """Sends ``signal`` to the broker; for SIGKILL returns once the process is gone."""
        pid = self._signal(signal)
        if pid and signal in ("SIGKILL", "KILL", "9"):
            self._wait_gone(pid, 30)

    def stop(self, timeout: int = 30) -> None:
        """SIGTERM (Kafka's clean shutdown), SIGKILL after ``timeout`` seconds."""
        pid = self._signal("SIGTERM")
        if not pid:
            return
        try:
            self._wait_gone(pid, timeout)
        except _StillThere:
            self.kill("SIGKILL")

    def start(self) -> None:
        """Runs the node's start command (detached) and waits until the process is there."""
        if self.pid():
            return
        self.ssh.run(f"setsid sh -c {shlex.quote(self.spec.start)} "
                     "</dev/null >/dev/null 2>&1 &", timeout=30)
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.3),
                                retry=retry_if_exception_type(_StillThere), reraise=True):
            with attempt:
                if not self.pid():
                    raise _StillThere(f"node {self.node_id}: broker did not start within 30s "
                                      f"({self.spec.start!r})")

    def pause(self) -> None:
        self._signal("SIGSTOP")

    def unpause(self) -> None:
        self._signal("SIGCONT")

    def exec(self, cmd: str, timeout_s: int = 60) -> tuple[int, str]:
        """Runs a shell command on the node; returns (exit code, output)."""
        proc = self.ssh.run(f"timeout {int(timeout_s)} sh -c {shlex.quote(cmd)} 2>&1",
                            check=False, timeout=timeout_s + 10)
        return proc.returncode, proc.stdout

    def logs(self) -> bytes:
        out = self.ssh.run(f"tail -c {LOG_TAIL_BYTES} {shlex.quote(self.spec.server_log)}",
                           check=False, binary=True).stdout
        return bytes(out)

    def copy_data_dir(self, dest: Path, topics: Sequence[str] | None = None) -> None:
        """Copies the node's log dirs (without preallocated indexes) into ``dest``; with
        ``topics``, only those topics' partitions (a shared cluster holds more than ours)."""
        dest.mkdir(parents=True, exist_ok=True)
        excludes = " ".join(f"--exclude={shlex.quote(p)}" for p in PREALLOCATED)
        # Kafka topic names are [a-zA-Z0-9._-]: safe for the shell's glob unquoted.
        what = " ".join(f"{t}-*" for t in topics) if topics else "."
        for d in self.spec.log_dirs:
            data = self.ssh.run(f"cd {shlex.quote(d)} && tar {excludes} -cf - {what}",
                                binary=True, timeout=300).stdout
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(dest, filter=no_links)

    def client_ip(self) -> str:
        """Our own address as the node sees it (the peer of our SSH connection)."""
        out = self.ssh.run("echo $SSH_CONNECTION").stdout.split()
        if not out:
            raise ClusterError(f"node {self.node_id}: SSH_CONNECTION is not set")
        return out[0]

    def remove(self) -> None:
        """Never removes anything: the node is the user's."""


def ssh_peer(ssh_connection: str) -> str | None:
    """The client address of an ``$SSH_CONNECTION`` value (``client-ip client-port
    server-ip server-port``): the address a node sees our connection come from, in its
    plain form (an IPv4-mapped IPv6 address as IPv4). None when it is not such a value."""
    words = ssh_connection.split()
    if len(words) != 4:
        return None
    return _plain(words[0])


def _plain(address: str) -> str | None:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])  # fe80::1%eth0: the zone is no part
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def peers_on_nodes(peers: Mapping[int, str],
                   addresses: Mapping[int, str]) -> list[tuple[int, int, str]]:
    """``(node, listed node, address)`` for each node that sees our SSH connection come from
    a listed node's address (``peers``: node id -> the ``$SSH_CONNECTION`` it printed;
    ``addresses``: node id -> its address in nodes.toml). Pure."""
    owner = {_plain(a): nid for nid, a in addresses.items() if _plain(a) is not None}
    found = []
    for nid, text in sorted(peers.items()):
        peer = ssh_peer(text)
        if peer is not None and peer in owner:
            found.append((nid, owner[peer], peer))
    return found


def read_ssh_connections(nodes: Sequence[RemoteNodeSpec]) -> dict[int, str]:
    """``$SSH_CONNECTION`` as each node reached over SSH prints it. A node that does not
    answer is left out: the run's start names it."""
    seen = {}
    for spec in nodes:
        if spec.ssh is None:
            continue
        try:
            seen[spec.node_id] = spec.ssh.run("echo $SSH_CONNECTION", timeout=30).stdout
        except SshError:
            continue
        finally:
            spec.ssh.close()  # a refused run leaves no ssh behind
    return seen


def no_links(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, and no link of any kind: a node's log dir is its broker's
    to write, and what a link there points at is not the run's data."""
    if member.issym() or member.islnk():
        return None
    return tarfile.data_filter(member, path)


class ExternalCluster(ClusterAdmin):
    """A cluster given by its bootstrap servers, with the nodes of nodes.toml faultable."""

    def __init__(self, bootstrap_servers: str, nodes: list[RemoteNodeSpec]) -> None:
        self._bootstrap = bootstrap_servers
        self.nodes: dict[int, SshNode | ContainerNode] = {
            s.node_id: SshNode(s) if s.container is None else ContainerNode(s) for s in nodes}
        self.name = "external"
        self.image = ""
        self.gateway_ip = ""
        self.kafka_version: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def controller_ids(self) -> list[int]:
        return sorted(i for i, n in self.nodes.items() if "controller" in n.spec.roles)

    @property
    def local_containers(self) -> bool:
        """True when the nodes are containers on this engine (faults use the engine)."""
        return any(isinstance(n, ContainerNode) for n in self.nodes.values())

    def __enter__(self) -> ExternalCluster:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self, ready_timeout_s: float = 60) -> None:
        """Checks every node answers over SSH and runs its broker, and that the cluster
        answers at the bootstrap servers; starts nothing."""
        for n in self.nodes.values():
            try:
                if not n.pid():
                    where = n.ssh if isinstance(n, SshNode) else n.remote.container
                    raise ClusterError(f"node {n.node_id} ({where}): its broker is not "
                                       "running")
            except SshError as e:
                raise ClusterError(str(e)) from None
        if self.nodes:
            first = next(iter(self.nodes.values()))
            self.gateway_ip = first.client_ip()
            self.kafka_version = self._kafka_version(first)
        self.wait_brokers(sorted(self.brokers), timeout_s=ready_timeout_s)

    @staticmethod
    def _kafka_version(node: SshNode | ContainerNode) -> str | None:
        """The Kafka version installed on a node, from its kafka-clients jar's name."""
        _, out = node.exec(f"ls {shlex.quote(node.remote.kafka_home)}/libs", 30)
        m = re.search(r"^kafka-clients-(\d+\.\d+\.\d+)\.jar$", out, re.M)
        return m.group(1) if m else None

    def stop(self) -> None:
        """Leaves every listed broker running (resumes paused ones, starts dead ones) and
        closes the SSH connections. Idempotent; never stops the cluster."""
        for n in self.nodes.values():
            try:
                status = n.status()
                if status == "paused":
                    n.unpause()
                elif status != "running":
                    n.start()
            except (SshError, ClusterError) as e:
                log.warning("node %s left as it is: %s", n.node_id, e)
        for n in self.nodes.values():
            if isinstance(n, SshNode):
                n.ssh.close()

    def active_controller(self) -> int:
        """The active KRaft controller, asked of the quorum from a node."""
        nodes = list(self.nodes.values())
        brokers = ",".join(n.client_address for n in nodes if "broker" in n.spec.roles)
        controllers = ",".join(self.nodes[v].controller_address for v in self.controller_ids)
        return ask_active_controller(
            [(n, f"{n.remote.kafka_home}/bin/kafka-metadata-quorum.sh") for n in nodes],
            brokers, controllers)

    def collect(self, dest: Path, data: bool = False,
                topics: Sequence[str] | None = None) -> list[CollectFailure]:
        """Copies each node's server log (and, if asked, its log dirs, or only ``topics``'
        partitions in them) into ``dest``."""
        dest.mkdir(parents=True, exist_ok=True)
        failures: list[CollectFailure] = []
        for nid, node in self.nodes.items():
            for what in ("log", "data") if data else ("log",):
                try:
                    if what == "log":
                        (dest / f"node-{nid}.log").write_bytes(node.logs())
                    else:
                        node.copy_data_dir(dest / "data" / f"broker-{nid}", topics)
                except (SshError, docker.errors.DockerException, OSError, tarfile.TarError) as e:
                    failures.append(CollectFailure(nid, what, f"{type(e).__name__}: {e}"))
        return failures
