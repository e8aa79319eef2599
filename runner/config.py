"""The typed configuration of one chaos run, and its validation (before anything starts)."""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from compose.config import ClusterConfig, ConfigError
from compose.image import SUPPORTED_VERSIONS
from compose.nodes_file import NodesFileError, load_nodes
from compose.ssh import SshTarget
from contract.clients import (
    CONFLUENT_KAFKA,
    ClientSpec,
    ClientSpecError,
    parse_client,
    unsupported,
)
from contract.faults import EXISTING_CLUSTER_FAULTS, RANDOM_FAULT_KINDS
from contract.known_bugs import KNOWN_BUGS, unknown_ids, version_tuple
from contract.liveness import DEFAULT_BOUND_S
from contract.settings import (
    CLASSIC_ONLY_CONSUMER_KEYS,
    CONSUMER_MODES,
    GROUP_PROTOCOLS,
    ISOLATION_LEVELS,
    SAIL_MASTER,
    ProducerSettingsError,
    normalise_acks,
    producer_settings,
    spark_master_problem,
)
from nemesis.faults import targets

TOPIC = "chaos"
#: host:port pairs, comma-separated (IPv6 hosts in brackets).
BOOTSTRAP = re.compile(r"^(\[[0-9a-fA-F:]+\]|[\w.-]+):\d+(,(\[[0-9a-fA-F:]+\]|[\w.-]+):\d+)*$")
#: What faults can do to nodes reached over SSH (no container engine, no cgroups of ours).
#: Free space a run needs under ``out`` (its history, the brokers' logs and data it copies).
MIN_FREE_MIB = 1024
#: The four tables of Kafka properties (Kafka's own names) that extend the typed fields.
KAFKA_TABLES = ("broker_config", "topic_config", "producer_config", "consumer_config")
#: A confluent-kafka release string (also refuses paths and pip options).
CLIENT_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.-]?(a|b|rc|post|dev)\d+)?$")


class RunConfigError(ValueError):
    """A run option is invalid; the message is the one line shown to the user."""


def engine_problem(master: str | None) -> str | None:
    """Why the checker cannot run on ``master`` here (one line), or None: the name, and for
    Sail whether its server can be kept from other local users."""
    why = spark_master_problem(master)
    if why is None and master == SAIL_MASTER:
        from checkers.engines import sail_unavailable

        why = sail_unavailable()
    return why


@dataclass
class RunConfig:
    """Everything a run needs. Kafka settings use Kafka's own property names in the four
    ``*_config`` dicts, which extend (and override) what the typed fields imply."""

    scenario: str = "custom"
    brokers: int = 3
    controllers: int = 0
    partitions: int = 3
    replication_factor: int = 3
    min_insync: int = 2
    unclean: bool = False
    acks: str = "all"
    idempotence: bool | None = None
    transactions: bool = False
    # transactional producers only: each runs a group consumer of its own on the run's topic
    # and sends its positions in every transaction it commits (send_offsets_to_transaction,
    # contract.settings.offsets_group names the group)
    send_offsets: bool = False
    producers: int = 2
    # seconds the run's last producer stays idle from its start (its client connected,
    # nothing sent) before it writes like the others; 0: none idle. An idle client is the
    # one librdkafka#5088's re-bootstrap loop catches (down-after-heal)
    idle_producer: float = 0.0
    consumers: int = 1
    consumer_mode: str = "assign"
    isolation_level: str = "read_committed"
    # the consumer group protocol of subscribe- and restart-mode consumers: classic, or
    # consumer (KIP-848; Kafka 4.0+)
    group_protocol: str = "classic"
    rate: float = 200.0
    duration: float = 60.0
    record_size: int = 100
    # records each producer writes before it stops (0: no limit, it writes for the duration)
    max_records: int = 0
    # restart mode: seconds the caught-up consumer goes without a poll before it closes (an
    # application finishing its work before it shuts down; 0: at once)
    restart_close_delay: float = 0.0
    faults: list[str] = field(default_factory=lambda: ["kill", "pause", "partition"])
    fault_interval: float = 10.0
    targets: list[str] = field(default_factory=lambda: ["random", "leader", "follower"])
    seed: int = 0
    kafka_version: str | None = None
    # confluent-kafka release for the producers and consumers (a cached venv, runner/clients.py);
    # None: the one installed with kafka-chaos
    client_version: str | None = None
    # the client that writes and reads, KIND[:VERSION] (contract.clients): confluent-kafka
    # (client_version is confluent-kafka:<it>), java:<kafka-clients version>, franz-go:<v>
    # or sarama:<v>
    client: str | None = None
    image: str | None = None
    # an existing cluster (not started by kafka-chaos) and the nodes.toml of its faultable nodes
    bootstrap_servers: str | None = None
    nodes: str | None = None
    # seconds without a lease renewal after which a node's watchdog (on the node over SSH,
    # on this host for a container) undoes our faults by itself (nemesis.dead_man)
    dead_man: float = 60.0
    out: str = "runs"
    fast_faults: bool = True
    drain_timeout: float = 120.0
    # seconds after the final heal within which every client must make progress (the
    # liveness phase, contract.liveness); 0: no liveness phase, the facts are not checked
    liveness: float = DEFAULT_BOUND_S
    collect_data: bool = True
    check: bool = True
    spark_master: str | None = None
    report: bool = True
    broker_config: dict[str, str] = field(default_factory=dict)
    topic_config: dict[str, str] = field(default_factory=dict)
    producer_config: dict[str, str] = field(default_factory=dict)
    consumer_config: dict[str, str] = field(default_factory=dict)
    # known-bug ids (contract/known_bugs.py) whose records may leave the verdict valid
    accept_known: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # acks=-1 is acks=all: spelled one way from here on (orchestrator, scenarios' expectations
        # and run.json's options read it); a bad value is left for validate() to refuse.
        if isinstance(self.acks, str):
            self.acks = normalise_acks(self.acks) or self.acks

    def _validate_types(self) -> None:
        """Each field holds what its annotation says (a TOML file or a test can give
        anything), and every number is finite: NaN slips through every range check."""
        for f in fields(self):
            v = getattr(self, f.name)
            opt = "--" + f.name.replace("_", "-")
            kind = str(f.type).replace(" | None", "")
            if v is None and "None" in str(f.type):
                continue
            ok = {
                "int": isinstance(v, int) and not isinstance(v, bool),
                "float": isinstance(v, int | float) and not isinstance(v, bool)
                and math.isfinite(v),
                "bool": isinstance(v, bool),
                "str": isinstance(v, str),
                "list[str]": isinstance(v, list) and all(isinstance(x, str) for x in v),
                "dict[str, str]": isinstance(v, dict) and all(isinstance(k, str) for k in v),
            }.get(kind, True)
            if not ok:
                what = {"int": "an integer", "float": "a finite number", "bool": "true or false",
                        "str": "a string", "list[str]": "a list of strings",
                        "dict[str, str]": "a table"}[kind]
                raise RunConfigError(f"{opt} must be {what}, got {v!r}")

    @property
    def client_spec(self) -> ClientSpec:
        """The run's client: ``client``, else confluent-kafka at ``client_version`` (None:
        the installed one). Raises ClientSpecError for a bad or contradicting ``client``."""
        if self.client is None:
            return ClientSpec(CONFLUENT_KAFKA, self.client_version)
        spec = parse_client(self.client)
        if self.client_version is not None and spec != ClientSpec(CONFLUENT_KAFKA,
                                                                  self.client_version):
            raise ClientSpecError(f"give --client or --client-version, not both "
                                  f"({self.client} and {self.client_version})")
        return spec

    def validate(self) -> None:
        """Raises RunConfigError with a one-line reason for the first bad value."""
        def bad(msg: str) -> RunConfigError:
            return RunConfigError(msg)

        self._validate_types()
        if self.bootstrap_servers is not None or self.nodes is not None:
            self._validate_existing()
        else:
            try:  # the cluster's own rules, in the words `cluster up` uses too
                ClusterConfig(brokers=self.brokers, controllers=self.controllers).validate()
            except ConfigError as e:
                raise bad(str(e)) from None
        if not 1 <= self.partitions <= 1000:
            raise bad(f"--partitions must be 1..1000, got {self.partitions}")
        if not 1 <= self.replication_factor <= self.brokers:
            raise bad(f"--replication-factor must be 1..{self.brokers} (the brokers), "
                      f"got {self.replication_factor}")
        if not 1 <= self.min_insync <= self.replication_factor:
            raise bad(f"--min-insync must be 1..{self.replication_factor} (the replication "
                      f"factor), got {self.min_insync}")
        try:  # the producer rules live once, in the contract (the workload asks them too)
            producer_settings(self.acks, self.idempotence, self.transactions,
                              self.producer_config)
        except ProducerSettingsError as e:
            raise bad(str(e)) from None
        if self.send_offsets and not self.transactions:
            raise bad("--send-offsets needs --transactions (offsets go into a transaction)")
        if not 1 <= self.producers <= 64:
            raise bad(f"--producers must be 1..64, got {self.producers}")
        if self.idle_producer and not (0 < self.idle_producer <= 3600):
            raise bad(f"--idle-producer must be 0 (none) or up to 3600 s, got "
                      f"{self.idle_producer}")
        if self.idle_producer and (self.producers < 2 or self.transactions):
            raise bad("--idle-producer needs --producers 2 or more (the others' "
                      "acknowledgements show the brokers served) and no --transactions")
        if not 0 <= self.consumers <= 16:
            raise bad(f"--consumers must be 0..16, got {self.consumers}")
        if self.consumer_mode not in CONSUMER_MODES:
            raise bad(f"--consumer-mode must be one of {', '.join(CONSUMER_MODES)}, "
                      f"got {self.consumer_mode!r}")
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise bad(f"--group-protocol must be {' or '.join(GROUP_PROTOCOLS)}, "
                      f"got {self.group_protocol!r}")
        classic_only = [k for k in CLASSIC_ONLY_CONSUMER_KEYS if k in self.consumer_config]
        if (self.group_protocol == "consumer" and self.consumer_mode != "assign"
                and classic_only and self.consumers):
            raise bad(f"--group-protocol consumer: consumer property {classic_only[0]} "
                      "belongs to the classic protocol (KIP-848 sets it broker side; "
                      "librdkafka refuses it): drop it, or run the classic protocol")
        if (self.group_protocol == "consumer" and self.kafka_version
                and version_tuple(self.kafka_version) < (4, 0)):
            raise bad(f"--group-protocol consumer needs Kafka 4.0 or later (KIP-848), "
                      f"got --kafka-version {self.kafka_version}")
        if self.isolation_level not in ISOLATION_LEVELS:
            raise bad(f"--isolation-level must be {' or '.join(ISOLATION_LEVELS)}, "
                      f"got {self.isolation_level!r}")
        if self.rate < 0:
            raise bad(f"--rate must be >= 0 (0: flat out), got {self.rate}")
        if not 1 <= self.duration <= 24 * 3600:
            raise bad(f"--duration must be 1..86400 s, got {self.duration}")
        if not 16 <= self.record_size <= 1_000_000:
            raise bad(f"--record-size must be 16..1000000 bytes, got {self.record_size}")
        if self.max_records < 0:
            raise bad(f"--max-records must be >= 0 (0: no limit), got {self.max_records}")
        if not 0 <= self.restart_close_delay <= 60:
            raise bad(f"--restart-close-delay must be 0..60 s, got {self.restart_close_delay}")
        unknown = [f for f in self.faults if f not in RANDOM_FAULT_KINDS]
        if unknown:
            known = ", ".join(RANDOM_FAULT_KINDS)
            raise bad(f"--faults: unknown kind {unknown[0]!r} (known: {known})")
        if "voter-partition" in self.faults and self.controllers < 3:
            raise bad("--faults voter-partition needs --controllers 3 or 5 (a quorum to cut)")
        if self.liveness != 0 and not 5 <= self.liveness <= 3600:
            raise bad(f"--liveness must be 0 (off) or 5..3600 s, got {self.liveness}")
        if not 10 <= self.dead_man <= 3600:
            raise bad(f"--dead-man must be 10..3600 s, got {self.dead_man}")
        if self.fault_interval <= 0:
            raise bad(f"--fault-interval must be > 0 s, got {self.fault_interval}")
        for t in self.targets:
            try:
                targets.validate(t)
            except ValueError as e:
                raise bad(f"--targets: {e}") from None
        if self.kafka_version and self.image:
            raise bad("give --kafka-version or --image, not both")
        if self.kafka_version and not SUPPORTED_VERSIONS.match(self.kafka_version):
            raise bad(f"--kafka-version must be 3.9.x or 4.x.y, got {self.kafka_version!r}")
        if self.image and not re.match(r"^[\w./:@-]+$", self.image):
            raise bad(f"--image is not an image reference: {self.image!r}")
        if self.client_version is not None and not CLIENT_VERSION.match(self.client_version):
            raise bad(f"--client-version must be a confluent-kafka release such as 2.12.0, "
                      f"got {self.client_version!r}")
        try:
            client = self.client_spec
        except ClientSpecError as e:
            raise bad(str(e)) from None
        why = unsupported(client, transactional=self.transactions, partitioner="round-robin",
                          consumer_modes=[self.consumer_mode] if self.consumers else [],
                          group_protocol=self.group_protocol)
        if why:
            raise bad(why)
        if self.idle_producer and client.kind != CONFLUENT_KAFKA:
            raise bad("--idle-producer runs with confluent-kafka only (its reports of every "
                      "broker down are recorded)")
        if self.send_offsets and (client.kind != CONFLUENT_KAFKA
                                  or self.bootstrap_servers is not None):
            raise bad("--send-offsets runs with confluent-kafka on a cluster kafka-chaos "
                      "starts only")
        spark = engine_problem(self.spark_master)
        if spark:
            raise bad(spark)
        unknown_bugs = unknown_ids(list(self.accept_known))
        if unknown_bugs:
            raise bad(f"--accept-known: unknown known-bug id {unknown_bugs[0]!r} (known: "
                      f"{', '.join(b.id for b in KNOWN_BUGS)})")
        for name in KAFKA_TABLES:
            for k in getattr(self, name):
                if not re.match(r"^[a-z0-9._-]+$", k):
                    raise bad(f"{name}: {k!r} is not a Kafka property name")

    def _validate_existing(self) -> None:
        """An existing cluster: reachable addresses, a readable nodes.toml for faults, and
        nothing that only a cluster kafka-chaos starts can honour. Sets ``brokers`` to the
        broker nodes listed (the replication factor is checked against them)."""
        if not self.bootstrap_servers:
            raise RunConfigError("--nodes needs --bootstrap-servers (the cluster's address)")
        if not BOOTSTRAP.match(self.bootstrap_servers):
            raise RunConfigError(f"--bootstrap-servers must be host:port[,host:port...], "
                                 f"got {self.bootstrap_servers!r}")
        if self.kafka_version or self.image:
            raise RunConfigError("--bootstrap-servers runs against the cluster given: drop "
                                 "--kafka-version and --image")
        if self.controllers:
            raise RunConfigError("--controllers describes a cluster kafka-chaos starts; "
                                 "with --bootstrap-servers the roles come from --nodes")
        if self.broker_config:
            raise RunConfigError("broker properties are set when kafka-chaos starts the "
                                 "cluster; with --bootstrap-servers the cluster's own apply "
                                 f"(drop {', '.join(sorted(self.broker_config))})")
        cannot = [f for f in self.faults if f not in EXISTING_CLUSTER_FAULTS]
        if cannot:
            raise RunConfigError(f"--faults {cannot[0]} needs a cluster kafka-chaos starts "
                                 f"(on --nodes: {', '.join(EXISTING_CLUSTER_FAULTS)})")
        if not self.nodes:
            if self.faults:
                raise RunConfigError("faults on an existing cluster need --nodes nodes.toml "
                                     "(or --faults none)")
            return
        try:
            specs = load_nodes(self.nodes)
        except NodesFileError as e:
            raise RunConfigError(f"--nodes: {e}") from None
        self.brokers = sum("broker" in s.roles for s in specs)

    # ------------------------------------------------------------------ Kafka settings
    def effective_topic_config(self) -> dict[str, str]:
        return {
            "min.insync.replicas": str(self.min_insync),
            "unclean.leader.election.enable": "true" if self.unclean else "false",
            **self.topic_config,
        }

    def replace(self, **changes: Any) -> RunConfig:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(changes)
        return RunConfig(**data)


def space_refusal(cfg: RunConfig) -> str | None:
    """Why a run of ``cfg`` cannot start for want of disk under ``out`` (one line), or None.
    Checked where a run starts, not in :meth:`RunConfig.validate` (which listing scenarios
    calls too)."""
    free = free_mib(cfg.out)
    if free is not None and free < MIN_FREE_MIB:
        return (f"only {free} MiB free under {cfg.out} (a run needs {MIN_FREE_MIB} MiB for "
                "its history and logs)")
    return None


#: The fault kinds that cut nodes from each other: a partition of any shape (the random
#: nemesis draws every shape; a script's kinds name none).
NODE_CUT_KINDS = ("partition", "voter-partition")


def ssh_peer_refusal(cfg: RunConfig, script_faults: Sequence[str] | None = None) -> str | None:
    """Why a run of ``cfg`` must not start because a cut between nodes would cut our own
    SSH (one line), or None. A node that sees our connection come from a listed node's
    address (we run on a node, or reach the nodes through a bastion that is one) loses it
    to a node-to-node cut: the cut's rules spare each node's own SSH port, not the replies
    of a connection that node opened to another's. Asks each node over SSH, so it is checked
    where a run starts; ``script_faults``: the kinds a scenario's script starts (None: the
    run's ``faults``)."""
    kinds = cfg.faults if script_faults is None else script_faults
    if not cfg.nodes or not any(k in NODE_CUT_KINDS for k in kinds):
        return None
    from compose.remote import peers_on_nodes, read_ssh_connections

    try:
        specs = load_nodes(cfg.nodes)
    except NodesFileError as e:
        return f"--nodes: {e}"
    seen = read_ssh_connections(specs)
    clash = peers_on_nodes(seen, {s.node_id: s.ip for s in specs if s.ip})
    if not clash:
        return None
    nid, owner, address = clash[0]
    return (f"node {nid} sees our SSH connection come from {address}, the address of node "
            f"{owner}: a partition between nodes would cut our own SSH (run from a host that "
            "is not a node, or without partition faults)")


def host_key_refusal(cfg: RunConfig) -> str | None:
    """Why a run of ``cfg`` must not start because a node reached over SSH has no known host
    key (one line), or None: kafka-chaos never trusts a host key on first use."""
    if not cfg.nodes:
        return None
    try:
        specs = load_nodes(cfg.nodes)
    except NodesFileError as e:
        return f"--nodes: {e}"
    return next((host_key_missing(s.node_id, s.ssh) for s in specs
                 if s.ssh is not None and not s.ssh.host_key_known()), None)


def host_key_missing(node_id: int, ssh: SshTarget) -> str:
    """The one line that refuses a node whose host key is not known."""
    port = f"-p {ssh.port} " if ssh.port != 22 else ""
    return (f"node {node_id} ({ssh.host}): no host key for it in {ssh.known_hosts_file}; "
            f"check the node's fingerprint and add it (ssh-keyscan {port}{ssh.host} >> "
            f"{ssh.known_hosts_file}), or name a known_hosts file in nodes.toml")


def free_mib(out: str) -> int | None:
    """MiB free on the file system ``out`` is (or will be) on: that of its nearest existing
    folder; None when none can be read."""
    p = Path(out).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free // 2**20)
    except OSError:
        return None


#: Every RunConfig field, in the order declared: the one list of run options that the command
#: line, TOML files and test matrices read (``dataclasses.fields`` of the class).
RUN_FIELDS = tuple(f.name for f in fields(RunConfig))
