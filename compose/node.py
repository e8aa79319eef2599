"""One Kafka node (broker, controller or both) in its own container.

The node keeps its container across faults: kill -9 and clean stops leave the container and
its data volume in place, and ``start`` brings the same node id back on the same IP address.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shlex
import shutil
import stat
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import docker
from docker.types import EndpointConfig
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed
from testcontainers.core.container import DockerContainer

from compose.admin import ClusterError
from compose.cleanup import labels
from compose.config import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    DATA_DIR,
    REPLICATION_PORT,
    ClusterConfig,
)

if TYPE_CHECKING:
    from compose.nodes_file import RemoteNodeSpec as RemoteSpec

PROPS_PATH = "/tmp/server.properties"


#: How long a pause that runc could not freeze is asked again (Node.pause).
PAUSE_RETRY_S = 15.0


def _freeze_failed(e: BaseException) -> bool:
    """The engine's answer when runc could not freeze the cgroup in time."""
    return isinstance(e, docker.errors.APIError) and "unable to freeze" in str(e)


@dataclass
class NodeSpec:
    """Where a node lives and what it runs."""

    node_id: int
    ip: str
    roles: str
    properties: dict[str, str]


def server_properties(cfg: ClusterConfig, node_id: int, ip: str, voters: str) -> dict[str, str]:
    """The full server.properties of one node (static KRaft voters)."""
    roles = cfg.roles(node_id)
    props: dict[str, str] = {
        "process.roles": roles,
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "log.dirs": DATA_DIR,
    }
    listeners = []
    advertised = []
    if "broker" in roles:
        listeners += [f"CLIENT://0.0.0.0:{CLIENT_PORT}", f"REPLICATION://0.0.0.0:{REPLICATION_PORT}"]
        advertised += [f"CLIENT://{ip}:{CLIENT_PORT}", f"REPLICATION://{ip}:{REPLICATION_PORT}"]
        props["inter.broker.listener.name"] = "REPLICATION"
    if "controller" in roles:
        listeners.append(f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
    props["listeners"] = ",".join(listeners)
    if advertised:
        props["advertised.listeners"] = ",".join(advertised)
    props["listener.security.protocol.map"] = (
        "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    props.update(cfg.default_broker_config())
    props.update({k: str(v) for k, v in cfg.broker_config.items()})
    return props


def start_script(cluster_id: str) -> str:
    """Formats storage on first start only (``--ignore-formatted``), then execs the server.

    Uses only /opt/kafka/bin scripts, so the official apache/kafka image works too.
    """
    return (
        f'printf "%s\\n" "$KC_SERVER_PROPERTIES" > {PROPS_PATH} && '
        f"/opt/kafka/bin/kafka-storage.sh format --ignore-formatted "
        f"-t {cluster_id} -c {PROPS_PATH} >/dev/null && "
        f"exec /opt/kafka/bin/kafka-server-start.sh {PROPS_PATH}"
    )


#: Index files Kafka preallocates (segment.index.bytes) and can rebuild from the log.
PREALLOCATED_SUFFIXES = (".index", ".timeindex")


class KafkaNode:
    """A node's container, with the process-level operations faults need."""

    def __init__(self, cfg: ClusterConfig, spec: NodeSpec, image: str, network: str,
                 cluster_id: str) -> None:
        self.cfg = cfg
        self.spec = spec
        self.node_id = spec.node_id
        self.ip = spec.ip
        self.volume = f"{cfg.name}-data-{spec.node_id}"
        props = "\n".join(f"{k}={v}" for k, v in spec.properties.items())
        self._tc = (
            DockerContainer(image)
            .with_name(f"{cfg.name}-node-{spec.node_id}")
            .with_env("KC_SERVER_PROPERTIES", props)
            .with_env("KAFKA_HEAP_OPTS", cfg.heap_opts)
            .with_command(["bash", "-c", start_script(cluster_id)])
            .with_volume_mapping(self.volume, DATA_DIR, "rw")
            .with_kwargs(
                entrypoint=[],
                hostname=f"node{spec.node_id}",
                labels=labels(cfg.name, spec.roles.replace(",", "+"), spec.node_id),
                network=network,
                networking_config={network: EndpointConfig("1.41", ipv4_address=spec.ip)},
                # kill -9 really is kill -9 of the JVM: bash execs it as pid 1.
                stop_signal="SIGTERM",
            )
        )

    @property
    def client_address(self) -> str:
        """host:port of its client listener."""
        return f"{self.ip}:{CLIENT_PORT}"

    # ------------------------------------------------------------------ lifecycle
    def create_and_start(self) -> None:
        # Create the named volume ourselves so it carries our labels (cleanup finds it).
        self._tc.get_docker_client().client.volumes.create(
            self.volume, labels=labels(self.cfg.name, "data", self.node_id))
        self._tc.start()

    @property
    def container(self) -> docker.models.containers.Container:
        c = self._tc.get_wrapped_container()
        assert c is not None, "node not started"
        return c

    def reload(self) -> dict:
        self.container.reload()
        return self.container.attrs

    def status(self) -> str:
        """Docker's state: running, paused, exited, ..."""
        return str(self.reload()["State"]["Status"])

    def pid(self) -> int:
        """Host pid of the node's init process (the JVM); 0 when not running."""
        return int(self.reload()["State"]["Pid"])

    def kill(self, signal: str = "SIGKILL") -> None:
        """Sends ``signal`` to the JVM; for SIGKILL, returns once the container has exited
        (the engine's kill is asynchronous, and a start before the exit would be a no-op)."""
        self.container.kill(signal=signal)
        if signal in ("SIGKILL", "KILL", "9"):
            self.container.wait(timeout=60)

    def stop(self, timeout: int = 30) -> None:
        """Clean shutdown (SIGTERM, then SIGKILL after ``timeout`` seconds)."""
        self.container.stop(timeout=timeout)

    def start(self) -> None:
        """Starts the same container again: same node id, data, and IP address."""
        self.container.start()

    def pause(self) -> None:
        """Freezes the container (its cgroup): connections stay open, nothing answers.

        runc gives up when the cgroup does not reach FROZEN in time — a task in the
        middle of I/O on a loaded machine ("unable to freeze") — and thaws it back, so
        asking again is safe; asked for up to PAUSE_RETRY_S."""
        for attempt in Retrying(stop=stop_after_delay(PAUSE_RETRY_S), wait=wait_fixed(0.5),
                                retry=retry_if_exception(_freeze_failed), reraise=True):
            with attempt:
                self.container.pause()

    def unpause(self) -> None:
        self.container.unpause()

    def remove(self) -> None:
        c = self._tc._container  # None when the container was never created
        if c is None:
            return
        with contextlib.suppress(docker.errors.NotFound):
            c.remove(force=True, v=True)

    def exec(self, cmd: str, timeout_s: int = 60) -> tuple[int, str]:
        """Runs a shell command inside the running node; returns (exit code, output)."""
        wrapped = f"timeout {int(timeout_s)} bash -c {shlex.quote(cmd)}"
        res = self.container.exec_run(["bash", "-c", wrapped], demux=False)
        return res.exit_code, (res.output or b"").decode(errors="replace")

    # ------------------------------------------------------------------ files
    def data_mountpoint(self) -> Path:
        """Host path of the node's data volume (local engines only)."""
        vol = self.container.client.volumes.get(self.volume)
        return Path(vol.attrs["Mountpoint"])

    def logs(self) -> bytes:
        return bytes(self.container.logs(stdout=True, stderr=True))

    def copy_data_dir(self, dest: Path, topics: Sequence[str] | None = None) -> None:
        """Copies the node's Kafka log directory out (works while stopped, and remotely),
        without the offset and time indexes: Kafka preallocates them (10 MiB each per active
        segment, sparse in the broker, whole in a copy) and rebuilds them from the segments,
        which are all the divergence check reads. With ``topics``, only their partitions."""
        dest.mkdir(parents=True, exist_ok=True)
        try:  # a local engine: read the volume itself, no tar of zero-filled indexes
            src = self.data_mountpoint()
            if src.is_dir() and os.access(src, os.R_OK | os.X_OK):
                _copy_log_dir(src, dest, topics)
                return
        except (docker.errors.APIError, OSError, KeyError):
            pass  # the engine's archive below works everywhere
        stream, _ = self.container.get_archive(DATA_DIR)
        buf = io.BytesIO(b"".join(stream))
        with tarfile.open(fileobj=buf) as tar:
            prefix = Path(DATA_DIR).name + "/"
            for m in tar.getmembers():
                if not m.name.startswith(prefix) or not (m.isfile() or m.isdir()):
                    continue
                if m.name.endswith(PREALLOCATED_SUFFIXES):
                    continue
                top = m.name[len(prefix):].split("/", 1)[0]
                if not _wanted(top, topics):
                    continue
                m.name = m.name[len(prefix):]
                tar.extract(m, dest, filter="data")


def _wanted(entry: str, topics: Sequence[str] | None) -> bool:
    """Whether a log directory entry (``<topic>-<partition>``, or a file) is copied."""
    return not topics or any(entry.startswith(f"{t}-") for t in topics)


def _copy_log_dir(src: Path, dest: Path, topics: Sequence[str] | None) -> None:
    """Copies a live Kafka log directory: without the preallocated indexes, tolerating
    files the broker deletes or renames meanwhile (old segments, ``.swap`` files), and
    following no symlink: the volume is the broker's to write, and a link planted there
    must not make root copy a host file (an SSH key, say) into a run directory."""
    for top in sorted(os.listdir(src)):
        if not _wanted(top, topics) or (src / top).is_symlink():
            continue
        for dirpath, _dirs, files in os.walk(src / top):  # os.walk enters no linked dir
            rel = Path(dirpath).relative_to(src)
            (dest / rel).mkdir(parents=True, exist_ok=True)
            for name in files:
                if not name.endswith(PREALLOCATED_SUFFIXES):
                    copy_regular(Path(dirpath) / name, dest / rel / name)
        if (src / top).is_file():
            copy_regular(src / top, dest / top)


def copy_regular(src: Path, dest: Path) -> bool:
    """Copies ``src`` when it is a regular file, opened without following a symlink (a link
    swapped in after a check is refused too); False when it is not, or is gone."""
    try:
        # O_NONBLOCK: a FIFO planted there would block the open (a regular file ignores it)
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP):
            return False
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return False
        with open(dest, "wb") as out:
            shutil.copyfileobj(fh, out)
    return True


class ContainerNode(KafkaNode):
    """A node of an existing cluster that is a container on this machine's engine (found by
    name, e.g. one started by docker-compose): the same engine-level faults as a node we
    started, but never removed."""

    def __init__(self, spec: RemoteSpec) -> None:  # not super(): that creates a container
        client = docker.from_env()
        assert spec.container is not None
        try:
            self._container = client.containers.get(spec.container)
        except docker.errors.NotFound:
            raise ClusterError(f"node {spec.node_id}: no container named {spec.container!r} "
                               "on this Docker engine") from None
        self.remote = spec  # kafka_home, log_dirs, ports
        self.node_id = spec.node_id
        networks = self._container.attrs["NetworkSettings"]["Networks"]
        first: dict[str, str] = next(iter(networks.values()), {})
        self.ip = spec.ip or first.get("IPAddress", "")
        self.gateway = first.get("Gateway", "")
        if not self.ip:
            raise ClusterError(f"node {spec.node_id}: container {spec.container} has no IP")
        self.spec = NodeSpec(spec.node_id, self.ip, spec.roles, {})

    @property
    def container(self) -> docker.models.containers.Container:
        return self._container

    @property
    def client_address(self) -> str:
        return f"{self.ip}:{self.remote.client_port}"

    @property
    def controller_address(self) -> str:
        return f"{self.ip}:{self.remote.controller_port}"

    def client_ip(self) -> str:
        """This host's address on the container's network (its gateway)."""
        return self.gateway

    def data_mountpoint(self) -> Path:
        """Host path of the volume or bind mount holding the node's first log dir."""
        want = self.remote.log_dirs[0]
        for m in self.reload().get("Mounts", []):
            if m.get("Destination") == want and m.get("Source"):
                return Path(m["Source"])
        raise KeyError(f"no mount at {want} in container {self.remote.container}")

    def remove(self) -> None:
        """Never removes anything: the container is the user's."""
