"""Typed configuration of a cluster: node counts, image, broker settings."""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass, field

from compose.image import DEFAULT_KAFKA_VERSION

# Ports inside every node's network namespace. Replication has a listener of its own so a
# fault can cut the replication path between brokers while clients and controllers still
# reach the node (the "leader cut from its followers" partition).
CLIENT_PORT = 9092
CONTROLLER_PORT = 9093
REPLICATION_PORT = 9094
DATA_DIR = "/var/lib/kafka/data"

MAX_BROKERS = 9

# Settings that make faults take effect within seconds instead of tens of seconds: a stuck
# follower leaves the ISR after 4 s, a silent broker is fenced after 3 s, a silent KIP-848
# group member after 10 s. For tests and scenarios; Kafka's defaults are 30 s, 9 s and 45 s.
FAST_FAULTS: dict[str, str] = {
    "replica.lag.time.max.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "controller.quorum.fetch.timeout.ms": "2000",
    "leader.imbalance.check.interval.seconds": "5",
    # KIP-848 groups: the session timeout and heartbeat are the broker's (45 s and 5 s by
    # default, each with a floor of its own); set as the workload sets a classic member's
    # (workloads/config.py), so a member whose leave was lost in a fault is fenced after 10 s
    # as a classic one is, not 45 s after each coordinator move, past the liveness bound
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "10000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


class ConfigError(ValueError):
    """A configuration value is out of range; the message is one line for the user."""


@dataclass
class ClusterConfig:
    """What cluster to start.

    ``controllers == 0`` means KRaft combined mode (every broker is also a voter); otherwise
    that many dedicated controller nodes are started besides the brokers.
    """

    brokers: int = 3
    controllers: int = 0
    kafka_version: str = DEFAULT_KAFKA_VERSION
    image: str | None = None
    broker_config: dict[str, str] = field(default_factory=dict)
    heap_opts: str = "-Xms256m -Xmx512m"
    name: str = field(default_factory=lambda: "kc" + secrets.token_hex(3))

    def validate(self) -> None:
        """Raises ConfigError with a one-line reason (also RunConfig's words for these)."""
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise ConfigError(f"--brokers must be between 1 and {MAX_BROKERS}, got {self.brokers}")
        if self.controllers not in (0, 1, 3, 5):
            raise ConfigError(
                f"--controllers must be 0 (combined), 1, 3 or 5, got {self.controllers}")

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> list[int]:
        """Voter node ids: the brokers themselves in combined mode, else 101, 102, ..."""
        if self.controllers == 0:
            return self.broker_ids
        return [100 + i for i in range(1, self.controllers + 1)]

    @property
    def node_ids(self) -> list[int]:
        extra = [] if self.controllers == 0 else self.controller_ids
        return self.broker_ids + extra

    def node_ips(self, subnet: ipaddress.IPv4Network) -> dict[int, str]:
        """Each node's fixed address on ``subnet``: brokers at .11-.19, dedicated controllers
        at .111-.115 (the gateway is .1)."""
        hosts = list(subnet.hosts())  # hosts[i] is .i+1
        return {nid: str(hosts[nid + 9]) for nid in self.node_ids}

    def voters(self, ips: dict[int, str]) -> str:
        """``controller.quorum.voters`` for nodes at ``ips``."""
        return ",".join(f"{v}@{ips[v]}:{CONTROLLER_PORT}" for v in self.controller_ids)

    def roles(self, node_id: int) -> str:
        if self.controllers == 0:
            return "broker,controller"
        return "controller" if node_id > 100 else "broker"

    def default_broker_config(self) -> dict[str, str]:
        """Settings sized for a small test machine; ``broker_config`` overrides them."""
        rf = str(min(3, self.brokers))
        return {
            "num.network.threads": "2",
            "num.io.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": str(min(2, self.brokers)),
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "default.replication.factor": rf,
        }
