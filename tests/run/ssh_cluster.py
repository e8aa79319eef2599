"""Test support (real cluster): Kafka nodes reached only over SSH, like a team's own hosts.

Each node is a container of the broker image plus an SSH server, iptables and tc
(``kafka-chaos/kafka-ssh``). The container runs only ``sshd``; the broker is started over SSH
by the start command written into ``nodes.toml``, so kafka-chaos finds it, kills it, pauses it
and restarts it the way it would on a real host. Everything carries kafka-chaos's labels and
is removed on exit (``compose.cleanup`` sweeps what a killed test left).
"""

from __future__ import annotations

import io
import ipaddress
import json
import subprocess
import uuid
from pathlib import Path
from types import TracebackType

import docker
from docker.types import EndpointConfig
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from compose import cleanup
from compose.cluster import create_network, new_cluster_id
from compose.config import CLIENT_PORT, DATA_DIR, ClusterConfig
from compose.image import DEFAULT_KAFKA_VERSION, LABEL, build_kafka_image
from compose.node import server_properties
from compose.nodes_file import RemoteNodeSpec, load_nodes
from compose.remote import ExternalCluster, SshNode
from compose.ssh import SshError, SshTarget

SSH_PACKAGES = ("openssh-server", "iptables", "iproute2")
PROPS = "/etc/kafka-server.properties"
HEAP = "-Xms256m -Xmx512m"

_INIT = """set -e
mkdir -p /run/sshd /root/.ssh
printf '%s\\n' "$KC_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
chmod 700 /root/.ssh && chmod 600 /root/.ssh/authorized_keys
printf '%s\n' "$KC_HOST_KEY" > /etc/ssh/ssh_host_ed25519_key
chmod 600 /etc/ssh/ssh_host_ed25519_key
ssh-keygen -A >/dev/null
printf '%s\\n' "$KC_SERVER_PROPERTIES" > {props}
/opt/kafka/bin/kafka-storage.sh format --ignore-formatted -t {cid} -c {props} >/dev/null
exec /usr/sbin/sshd -D -e
"""


def ssh_image(kafka_version: str = DEFAULT_KAFKA_VERSION) -> str:
    """The broker image plus an SSH server, iptables and tc (built on first use from the
    Debian mirror the base image was bootstrapped from, then cached)."""
    kafka = build_kafka_image(kafka_version)
    tag = kafka.replace("kafka-chaos/kafka:", "kafka-chaos/kafka-ssh:", 1)
    client = docker.from_env()
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    dockerfile = (f"FROM {kafka}\n"
                  "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install "
                  f"-y -qq --no-install-recommends {' '.join(SSH_PACKAGES)} >/dev/null "
                  "&& rm -rf /var/lib/apt/lists/*\n")
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True,
                        pull=False, labels={LABEL: "1"})
    return tag


class SshCluster:
    """``brokers`` combined-mode nodes reachable over SSH; ``nodes_file`` describes them."""

    def __init__(self, workdir: Path, brokers: int = 3,
                 kafka_version: str = DEFAULT_KAFKA_VERSION) -> None:
        self.workdir = workdir
        self.cfg = ClusterConfig(brokers=brokers)
        self.kafka_version = kafka_version
        self.name = f"kc-ssh-{uuid.uuid4().hex[:6]}"
        self.client = docker.from_env()
        self.key = workdir / "id_ed25519"
        self.nodes_file = workdir / "nodes.toml"
        self.specs: list[RemoteNodeSpec] = []

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{s.ip}:{CLIENT_PORT}" for s in self.specs)

    def __enter__(self) -> SshCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        image = ssh_image(self.kafka_version)
        self.workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)],
                       check=True, capture_output=True)
        pub = self.key.with_suffix(".pub").read_text().strip()
        net = create_network(self.client, f"{self.name}-net",
                             cleanup.labels(self.name, "network"))
        ips = self.cfg.node_ips(ipaddress.IPv4Network(net.attrs["IPAM"]["Config"][0]["Subnet"]))
        voters = self.cfg.voters(ips)
        cid = new_cluster_id()
        # each node's host key made here and handed over through Docker, and known_hosts
        # written from it: the run trusts no host key on first use
        host_keys: dict[int, Path] = {}
        for nid in self.cfg.node_ids:
            host_keys[nid] = self.workdir / f"host-key-{nid}"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(host_keys[nid])], check=True, capture_output=True)
        (self.workdir / "known_hosts").write_text("".join(
            f"{ips[nid]} {host_keys[nid].with_suffix('.pub').read_text().strip()}\n"
            for nid in self.cfg.node_ids))
        for nid in self.cfg.node_ids:
            props = server_properties(self.cfg, nid, ips[nid], voters)
            self.client.containers.run(
                image, ["bash", "-c", _INIT.format(props=PROPS, cid=cid)], detach=True,
                name=f"{self.name}-node-{nid}", hostname=f"node{nid}", entrypoint=[],
                labels=cleanup.labels(self.name, "ssh-node", nid), cap_add=["NET_ADMIN"],
                environment={"KC_AUTHORIZED_KEY": pub,
                             "KC_HOST_KEY": host_keys[nid].read_text(),
                             "KC_SERVER_PROPERTIES": "\n".join(
                                 f"{k}={v}" for k, v in props.items())},
                network=net.name,
                networking_config={net.name: EndpointConfig("1.41", ipv4_address=ips[nid])})
        self._write_nodes_file(ips)
        self.specs = load_nodes(self.nodes_file)
        for spec in self.specs:
            self._wait_ssh(spec.ssh)
        for spec in self.specs:
            SshNode(spec).start()
        ExternalCluster(self.bootstrap_servers, self.specs).wait_brokers(
            [s.node_id for s in self.specs], timeout_s=120)

    def _write_nodes_file(self, ips: dict[int, str]) -> None:
        start = (f"KAFKA_HEAP_OPTS='{HEAP}' exec /opt/kafka/bin/kafka-server-start.sh {PROPS} "
                 ">>/opt/kafka/logs/server.log 2>&1")
        q = json.dumps  # a JSON string is a TOML basic string
        lines = ['user = "root"', f"key = {q(str(self.key))}",
                 f"known_hosts = {q(str(self.workdir / 'known_hosts'))}",
                 f"log_dirs = [{q(DATA_DIR)}]", f"start = {q(start)}"]
        for nid, ip in sorted(ips.items()):
            lines += ["", "[[node]]", f"id = {nid}", f"host = {q(ip)}",
                      f"roles = {q(self.cfg.roles(nid))}"]
        self.nodes_file.write_text("\n".join(lines) + "\n")

    @staticmethod
    def _wait_ssh(target: SshTarget) -> None:
        for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type(SshError), reraise=True):
            with attempt:
                target.run("true", timeout=10)

    def container(self, nid: int) -> docker.models.containers.Container:
        return self.client.containers.get(f"{self.name}-node-{nid}")

    def stop(self) -> None:
        for spec in self.specs:
            spec.ssh.close()
        cleanup.sweep_cluster(self.client, self.name)
