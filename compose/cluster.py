"""A real multi-node Kafka cluster (KRaft) in Docker, started through Testcontainers.

Every node gets a fixed IP address on a labelled bridge network of its own, so brokers stay
reachable from the host at the same address across restarts (random host ports would change).
Use it as a context manager: the containers, network and volumes are removed on every exit
path, and resources left by a killed process are swept on the next start.
"""

from __future__ import annotations

import ipaddress
import logging
import random
import tarfile
import time
import uuid
from base64 import urlsafe_b64encode
from pathlib import Path
from types import TracebackType

import docker
from testcontainers.core.config import testcontainers_config

from compose import cleanup
from compose.admin import (  # noqa: F401 - re-exported: callers import them from here
    ClusterAdmin,
    ClusterError,
    CollectFailure,
    PartitionState,
    ask_active_controller,
)
from compose.config import CONTROLLER_PORT, ClusterConfig
from compose.image import resolve_image
from compose.node import KafkaNode, NodeSpec, server_properties
from compose.stop_signals import StopSignals, deferred_signals, install, unguarded_default

log = logging.getLogger("kafka_chaos.cluster")

# Ryuk's image cannot be pulled here; we clean up by label ourselves (compose.cleanup).
testcontainers_config.ryuk_disabled = True


def free_subnets(client: docker.DockerClient) -> list[ipaddress.IPv4Network]:
    """The /24s of 172.24.0.0/13 that no Docker network on this engine uses yet."""
    used: list[ipaddress.IPv4Network] = []
    for n in client.networks.list():
        for cfg in (n.attrs.get("IPAM") or {}).get("Config") or []:
            if "Subnet" in cfg and ":" not in cfg["Subnet"]:
                used.append(ipaddress.IPv4Network(cfg["Subnet"]))
    return [cand for second in range(24, 32) for third in range(0, 256)
            if not any((cand := ipaddress.IPv4Network(f"172.{second}.{third}.0/24")).overlaps(u)
                       for u in used)]


#: How often a cluster tries another subnet when a concurrent start took the one it chose.
NETWORK_ATTEMPTS = 8


def create_network(client: docker.DockerClient, name: str,
                   labels: dict[str, str]) -> docker.models.networks.Network:
    """A labelled bridge network on a free /24, its gateway at .1.

    Listing free subnets and creating the network are two steps: a cluster starting at the
    same moment (another test session, a second run) can take the chosen /24 in between, and
    the engine refuses with "Pool overlaps". Then the next free one is tried; candidates are
    drawn at random so that concurrent starts rarely pick the same one to begin with.
    """
    rng = random.Random()
    for attempt in range(NETWORK_ATTEMPTS):
        free = free_subnets(client)
        if not free:
            raise ClusterError("no free /24 subnet in 172.24.0.0/13 for the cluster network")
        subnet = rng.choice(free[:64])
        gateway = str(next(subnet.hosts()))
        try:
            return client.networks.create(
                name, driver="bridge",
                ipam=docker.types.IPAMConfig(pool_configs=[
                    docker.types.IPAMPool(subnet=str(subnet), gateway=gateway)]),
                labels=labels)
        except docker.errors.APIError as e:
            if "overlap" not in str(e).lower() or attempt == NETWORK_ATTEMPTS - 1:
                raise
            log.info("subnet %s was taken meanwhile (%s); trying another", subnet, e)
    raise AssertionError("unreachable")


def new_cluster_id() -> str:
    """A random Kafka cluster id (22 URL-safe base64 characters).

    Never one that starts with '-': kafka-storage.sh would read it as an option and refuse to
    format (one cluster start in 64 failed that way); Kafka's own Uuid.randomUuid avoids them
    for the same reason."""
    while True:
        cid = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class KafkaCluster(ClusterAdmin):
    """Starts, exposes and tears down one cluster. Not thread-safe for start/stop."""

    def __init__(self, cfg: ClusterConfig) -> None:
        cfg.validate()
        self.cfg = cfg
        self.name = cfg.name
        self.client = docker.from_env()
        self.cluster_id = new_cluster_id()
        self.image = ""
        self.nodes: dict[int, KafkaNode] = {}
        self.network_name = f"{cfg.name}-net"
        self._network: docker.models.networks.Network | None = None
        self.gateway_ip = ""  # the host's address on the cluster network (the "client")

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> KafkaCluster:
        # A script's `with KafkaCluster(...)` gets the guard our runs have: SIGTERM and SIGHUP
        # raise (their default ends the process with the cluster left running) and a signal
        # that arrives while the cluster is being removed cannot cut that short. Handlers a
        # program set itself, or a guard of ours around this (a run, the pytest plugin),
        # are left alone.
        self._signals = StopSignals(repeat=True)
        self._restore_signals = install(self._signals, unguarded_default)
        try:
            self.start()
        except BaseException:
            self._stop_guarded()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop_guarded()

    def _stop_guarded(self) -> None:
        # Our own guard counts the signals from now on; a guard around us that is still
        # armed (the pytest plugin's, between two tests) raises once the cluster is gone.
        self._signals.disarm()
        try:
            with deferred_signals("the cluster is removed"):
                self.stop()
        finally:
            self._restore_signals()

    def start(self, ready_timeout_s: float = 120) -> None:
        cleanup.sweep_orphans(self.client)
        self.image = resolve_image(self.cfg.kafka_version, self.cfg.image)
        self._network = create_network(self.client, self.network_name,
                                       cleanup.labels(self.name, "network"))
        subnet = ipaddress.IPv4Network(self._network.attrs["IPAM"]["Config"][0]["Subnet"])
        self.gateway_ip = str(next(subnet.hosts()))
        ips = self.cfg.node_ips(subnet)
        voters = self.cfg.voters(ips)
        t0 = time.monotonic()
        for nid in self.cfg.node_ids:
            spec = NodeSpec(nid, ips[nid], self.cfg.roles(nid),
                            server_properties(self.cfg, nid, ips[nid], voters))
            node = KafkaNode(self.cfg, spec, self.image, self.network_name, self.cluster_id)
            self.nodes[nid] = node
            node.create_and_start()
        self.wait_brokers(self.cfg.broker_ids, timeout_s=ready_timeout_s)
        log.info("cluster %s up in %.1fs: %s", self.name, time.monotonic() - t0,
                 self.bootstrap_servers)

    def stop(self) -> None:
        """Removes every container, the network and the volumes. Idempotent."""
        for node in self.nodes.values():
            try:
                node.remove()
            except docker.errors.APIError as e:
                log.warning("removing node %s: %s", node.node_id, e)
        cleanup.sweep_cluster(self.client, self.name)
        self.nodes.clear()

    # ------------------------------------------------------------------ addresses
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.client_address for n in self.brokers.values())

    @property
    def controller_ids(self) -> list[int]:
        return self.cfg.controller_ids

    def active_controller(self) -> int:
        """The node id of the active KRaft controller (asked of the quorum itself)."""
        tool = "/opt/kafka/bin/kafka-metadata-quorum.sh"
        running = [(n, tool) for n in self.nodes.values() if n.status() == "running"]
        controllers = ",".join(f"{self.nodes[v].ip}:{CONTROLLER_PORT}"
                               for v in self.cfg.controller_ids)
        return ask_active_controller(running, self.bootstrap_servers, controllers)

    # ------------------------------------------------------------------ artefacts
    def collect(self, dest: Path, data: bool = False) -> list[CollectFailure]:
        """Copies each node's log (and, if asked, its Kafka log directory) into ``dest``.

        Returns what could not be copied (the caller records it: a missing copy of the
        data must not read as "the replicas agree")."""
        dest.mkdir(parents=True, exist_ok=True)
        failures: list[CollectFailure] = []
        for nid, node in self.nodes.items():
            what = "log"
            try:
                (dest / f"node-{nid}.log").write_bytes(node.logs())
                if data:
                    what = "data"
                    node.copy_data_dir(dest / "data" / f"broker-{nid}")
            except (docker.errors.DockerException, OSError, tarfile.TarError) as e:
                log.warning("could not collect %s of node %s: %s", what, nid, e)
                failures.append(CollectFailure(nid, what, f"{type(e).__name__}: {e}"))
            if data and what == "log":  # the log copy failed first: the data was not tried
                failures.append(CollectFailure(nid, "data", "not copied: the node's log "
                                                             "copy failed first"))
        return failures
