"""The settings of run.json (DESIGN.md §3) with Kafka's and librdkafka's defaults for missing
keys (docs/CONVENTIONS.md): what the checker's guarantee model reads and what the report shows
as "in force"."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.clients import CONFLUENT_KAFKA
from contract.known_bugs import version_tuple

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
#: The values a run accepts: acks (``-1`` is also accepted, as ``all``), consumer isolation
#: levels, and how a run's consumers get their partitions (reads.parquet's ``mode`` column
#: adds ``drain`` for the final read).
ACKS_VALUES = ("0", "1", "all")
ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)
#: restart: a group consumer alone in its group that closes and rejoins after catching up
CONSUMER_MODES = ("assign", "subscribe", "restart")
#: The consumer group protocols (librdkafka ``group.protocol``): the classic rebalance
#: protocol, or KIP-848's (``consumer``: the broker assigns; Kafka 4.0+).
GROUP_PROTOCOLS = ("classic", "consumer")
#: Consumer properties of the classic protocol only: with ``group.protocol=consumer`` the
#: broker sets them (KIP-848) and librdkafka refuses to create the consumer.
CLASSIC_ONLY_CONSUMER_KEYS = ("session.timeout.ms", "heartbeat.interval.ms",
                              "partition.assignment.strategy", "group.protocol.type")
#: librdkafka's max.poll.interval.ms when a run does not set it.
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000
#: The group the run's subscribe-mode consumers join (restart mode: ``<group>-<reader>``).
DEFAULT_GROUP_ID = "kc-consumers"
#: A transactional producer's send_offsets_to_transaction timeout (run option
#: ``send_offsets``): short, so a call blocked past it (librdkafka#5456, #5511) shows soon.
OFFSETS_CALL_TIMEOUT_S = 5.0


def offsets_group(transactional_id: str, n: int = 0) -> str:
    """The consumer group whose offsets the producer of ``transactional_id`` sends in its
    transactions (run option ``send_offsets``); the run picks ``n`` so that the group's
    coordinator is not the transaction's (run.json ``workload.transactions.offsets_groups``)."""
    return f"{transactional_id}-offsets-{n}"

#: The defaults in force when run.json leaves a setting unset (Kafka's, and librdkafka's for
#: the clients: its ``enable.idempotence`` is false and its consumer reads committed).
DEFAULT_ACKS = "all"
DEFAULT_MIN_INSYNC = 1
DEFAULT_UNCLEAN = False
DEFAULT_IDEMPOTENCE = False
DEFAULT_ISOLATION = READ_COMMITTED


def _truthy(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def _int(value: Any, default: int | None) -> int | None:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _count(value: Any) -> int:
    """A non-negative whole number from run.json, 0 when absent or not one."""
    v = _float(value)
    return int(v) if v is not None and 0 < v < 2**63 else 0


@dataclass(frozen=True)
class Settings:
    """What the checker reads from run.json."""

    acks: str = DEFAULT_ACKS  # "all", "1" or "0"
    min_insync: int = DEFAULT_MIN_INSYNC
    replication_factor: int | None = None
    unclean: bool = DEFAULT_UNCLEAN
    idempotence: bool = DEFAULT_IDEMPOTENCE
    transactional: bool = False
    kafka_version: str | None = None
    default_isolation: str = DEFAULT_ISOLATION
    reader_isolation: dict[str, str] = field(default_factory=dict)
    reader_modes: dict[str, str] = field(default_factory=dict)
    brokers: int | None = None
    scenario: str | None = None
    expect: dict[str, Any] | None = None
    mechanism: list[dict[str, Any]] | None = None
    spark_version: str | None = None
    librdkafka_version: str | None = None
    # the client that wrote and read the workload's records (contract.clients): librdkafka's
    # known bugs apply only to confluent-kafka's
    client: str = CONFLUENT_KAFKA
    # enable.partition.eof of consumer_config, and per reader (librdkafka#4844's condition)
    partition_eof: bool = False
    reader_partition_eof: dict[str, bool] = field(default_factory=dict)
    # known-bug ids the run accepts (run.json accept_known, contract/known_bugs.py)
    accept_known: tuple[str, ...] = ()
    # the consumer group of each reader workload.consumers lists (None: in no group), and
    # consumer_config's group.id, the group of a reader it does not list
    reader_groups: dict[str, str | None] = field(default_factory=dict)
    consumer_group: str | None = None
    # producer id -> (acks, idempotence) of each producer of run.json ``producer_configs``
    # (a test body's session records every producer's settings); the run-level ``acks``
    # and ``idempotence`` are then the strictest of them
    per_producer: dict[int, tuple[str, bool]] = field(default_factory=dict)
    # workload.liveness_s: the liveness bound after the final heal (0: the run had no
    # liveness phase; None: recorded before liveness was checked)
    liveness_s: float | None = None
    # workload.max_records: the records each producer writes before it stops by itself
    # (0: no limit); a producer that wrote them all has nothing left to acknowledge
    max_records: int = 0
    # broker.session.timeout.ms of broker_config, in seconds (Kafka's default 9 s): a broker
    # down longer is fenced and leaves the metadata
    broker_session_timeout_s: float = 9.0
    # group.consumer.session.timeout.ms of broker_config, in seconds (Kafka's default 45 s):
    # how long a KIP-848 member whose leave was lost keeps its partitions
    group_session_timeout_s: float = 45.0
    # group.protocol and max.poll.interval.ms of each reader workload.consumers lists (its
    # own setting, else consumer_config's, else librdkafka's default): librdkafka#5541's
    # facts are per consumer
    reader_group_protocol: dict[str, str] = field(default_factory=dict)
    reader_max_poll_interval_ms: dict[str, int] = field(default_factory=dict)

    def isolation(self, reader: str) -> str:
        """The isolation level of one reader (per-reader setting, else consumer_config)."""
        return self.reader_isolation.get(reader, self.default_isolation)

    def known_bug_version(self, component: str) -> str | None:
        """The run's version of a known bug's component (contract.known_bugs: ``kafka`` or
        ``librdkafka``); the run's librdkafka only when it wrote and read the records."""
        return {"librdkafka": self.librdkafka_version, "kafka": self.kafka_version}.get(component)

    def component_used(self, component: str) -> bool:
        """Whether the workload ran ``component`` at all: librdkafka's bugs cannot have
        caused what another client wrote or read."""
        return component != "librdkafka" or self.client == CONFLUENT_KAFKA

    def group_protocol(self, reader: str) -> str:
        """The group protocol ``reader`` used (``classic`` unless it said ``consumer``)."""
        return self.reader_group_protocol.get(reader, "classic")

    def max_poll_interval_ms(self, reader: str) -> int:
        """The max.poll.interval.ms ``reader`` was given."""
        return self.reader_max_poll_interval_ms.get(reader, DEFAULT_MAX_POLL_INTERVAL_MS)

    def group(self, reader: str) -> str | None:
        """The consumer group ``reader`` joins, or None (assign mode, or not known)."""
        return self.reader_groups.get(reader, self.consumer_group)

    @property
    def unclean_honoured(self) -> bool:
        """KRaft ignores unclean.leader.election.enable before 3.9 (KAFKA-12670)."""
        version = version_tuple(self.kafka_version)
        return not version or version >= (3, 9)


def raw_acks(producer: Mapping[str, Any]) -> Any:
    """The producer's acks as run.json states it (either of librdkafka's names), or None."""
    return producer.get("acks", producer.get("request.required.acks"))


def topic_settings(run: dict[str, Any]) -> dict[str, Any]:
    """The broker's settings overridden by the topic's (a topic setting wins)."""
    return {**(run.get("broker_config") or {}), **(run.get("topic_config") or {})}


def transactions_enabled(run: dict[str, Any]) -> bool:
    """Transactional producers: a transactional.id is set or the workload enables them."""
    flag = ((run.get("workload") or {}).get("transactions") or {}).get("enabled")
    producer = run.get("producer_config") or {}
    return bool(producer.get("transactional.id")) or _truthy(flag, False)


def normalise_acks(value: Any) -> str | None:
    """``"all"`` for all or -1 (the same setting), ``"0"``/``"1"``; None for anything else."""
    text = str(value).strip().lower()
    if text == "-1":
        return "all"
    return text if text in ACKS_VALUES else None


class ProducerSettingsError(ValueError):
    """Producer settings the client would refuse or contradict; the message is one line."""


def producer_settings(acks: Any, idempotence: bool | None = None, transactional: bool = False,
                      overrides: Mapping[str, Any] | None = None) -> tuple[str, bool]:
    """The acks (``"0"``, ``"1"`` or ``"all"``) and whether idempotence is on, for a producer
    configured with these typed settings; raises :class:`ProducerSettingsError` for values or
    combinations librdkafka refuses. The one place these rules live: the run configuration
    (chaos) and the workload's producer configuration both ask here.

    ``idempotence`` None: on exactly when acks=all (like Kafka's Java client); transactions
    imply it. ``overrides`` are librdkafka properties given alongside (``producer_config``):
    as in the client, their ``acks`` and ``enable.idempotence`` win over the typed values.
    """
    extra = overrides or {}
    given = raw_acks(extra)
    if given is None:
        given = acks
        norm = normalise_acks(acks) if isinstance(acks, str) else None
    else:
        norm = normalise_acks(given)
    if norm is None:
        raise ProducerSettingsError(f"acks must be 0, 1 or all (-1 is all), got {given!r}")
    if "enable.idempotence" in extra:
        idempotence = _truthy(extra["enable.idempotence"], False)
    if transactional and idempotence is False:
        raise ProducerSettingsError("transactions need enable.idempotence=true")
    if transactional and norm != "all":
        raise ProducerSettingsError(f"transactions need acks=all, got acks={norm}")
    if idempotence and norm != "all":
        raise ProducerSettingsError(f"enable.idempotence=true needs acks=all, got acks={norm}")
    return norm, transactional or (norm == "all" if idempotence is None else idempotence)


def _acks(producer: dict[str, Any]) -> str:
    raw = raw_acks(producer)
    return normalise_acks(DEFAULT_ACKS if raw is None else raw) or DEFAULT_ACKS


#: acks from the loosest to the strictest.
ACKS_ORDER = ("0", "1", "all")


def _per_producer(run: Mapping[str, Any], transactional: bool
                       ) -> dict[int, tuple[str, bool]]:
    """run.json ``producer_configs`` (producer id -> its producer_config) as (acks,
    idempotence) per producer; malformed entries are left out."""
    out: dict[int, tuple[str, bool]] = {}
    configs = run.get("producer_configs")
    for key, conf in (configs.items() if isinstance(configs, Mapping) else ()):
        try:
            producer = int(key)
        except (TypeError, ValueError):
            continue
        if isinstance(conf, Mapping):
            out[producer] = (_acks(dict(conf)), _truthy(conf.get("enable.idempotence"),
                                                       DEFAULT_IDEMPOTENCE) or transactional
                             or bool(conf.get("transactional.id")))
    return out


def settings_from_run(run: dict[str, Any]) -> Settings:
    """Build :class:`Settings` from a parsed run.json (missing keys mean defaults)."""
    broker = run.get("broker_config") or {}
    topic = run.get("topic_config") or {}
    producer = run.get("producer_config") or {}
    consumer = run.get("consumer_config") or {}
    workload = run.get("workload") or {}
    cluster = run.get("cluster") or {}
    versions = run.get("versions") or {}

    def topic_or_broker(key: str) -> Any:
        return topic.get(key, broker.get(key))

    transactional = transactions_enabled(run)
    idempotence = _truthy(producer.get("enable.idempotence"), DEFAULT_IDEMPOTENCE) or transactional
    acks = _acks(producer)
    per_producer = _per_producer(run, transactional)
    if per_producer:  # the run is judged by its strictest producer; looser ones per record
        acks = max((a for a, _ in per_producer.values()), key=_acks_rank)
        idempotence = any(i for _, i in per_producer.values())
    default_iso = str(consumer.get("isolation.level", DEFAULT_ISOLATION)).strip().lower()
    reader_iso: dict[str, str] = {}
    reader_modes: dict[str, str] = {}
    reader_eof: dict[str, bool] = {}
    reader_groups: dict[str, str | None] = {}
    reader_protocol: dict[str, str] = {}
    reader_max_poll: dict[str, int] = {}
    default_group = consumer.get("group.id")
    default_group = str(default_group) if default_group else None
    for c in workload.get("consumers") or []:
        if not isinstance(c, dict) or "id" not in c:
            continue
        level = c.get("isolation_level") or (c.get("consumer_config") or {}).get(
            "isolation.level"
        )
        if level:
            reader_iso[str(c["id"])] = str(level).strip().lower()
        if c.get("mode"):
            reader_modes[str(c["id"])] = str(c["mode"])
        eof = (c.get("consumer_config") or {}).get("enable.partition.eof")
        if eof is not None:
            reader_eof[str(c["id"])] = _truthy(eof, False)
        reader_groups[str(c["id"])] = _group(c, default_group)
        own = {**consumer, **(c.get("consumer_config") or {})}
        reader_protocol[str(c["id"])] = str(c.get("group_protocol")
                                            or own.get("group.protocol") or "classic")
        reader_max_poll[str(c["id"])] = _int(own.get("max.poll.interval.ms"),
                                             DEFAULT_MAX_POLL_INTERVAL_MS) \
            or DEFAULT_MAX_POLL_INTERVAL_MS
    # imported here: validating settings (the CLI's bad input) needs no pyarrow
    from contract.schemas import DRAIN_READER

    drain = workload.get("drain") or {}
    if isinstance(drain, dict) and drain.get("isolation_level"):
        reader_iso[DRAIN_READER] = str(drain["isolation_level"]).strip().lower()
    return Settings(
        acks=acks,
        min_insync=_int(topic_or_broker("min.insync.replicas"), DEFAULT_MIN_INSYNC)
        or DEFAULT_MIN_INSYNC,
        replication_factor=_int(
            topic.get("replication.factor", broker.get("default.replication.factor")), None
        ),
        unclean=_truthy(topic_or_broker("unclean.leader.election.enable"), DEFAULT_UNCLEAN),
        idempotence=idempotence,
        transactional=transactional,
        kafka_version=versions.get("kafka") or cluster.get("kafka_version"),
        default_isolation=default_iso,
        reader_isolation=reader_iso,
        reader_modes=reader_modes,
        brokers=_int(cluster.get("brokers"), None),
        scenario=run.get("scenario"),
        expect=run.get("expect") if isinstance(run.get("expect"), dict) else None,
        mechanism=run.get("mechanism") if isinstance(run.get("mechanism"), list) else None,
        spark_version=versions.get("spark"),
        librdkafka_version=versions.get("librdkafka"),
        client=str(versions.get("client") or CONFLUENT_KAFKA),
        partition_eof=_truthy(consumer.get("enable.partition.eof"), False),
        reader_partition_eof=reader_eof,
        accept_known=tuple(str(x) for x in run.get("accept_known") or ()
                           if isinstance(x, str)),
        reader_groups=reader_groups,
        consumer_group=default_group,
        per_producer=per_producer,
        liveness_s=_float(workload.get("liveness_s")),
        max_records=_count(workload.get("max_records")),
        broker_session_timeout_s=(_float(broker.get("broker.session.timeout.ms")) or 9000.0)
        / 1000,
        group_session_timeout_s=(_float(broker.get("group.consumer.session.timeout.ms"))
                                 or 45000.0) / 1000,
        reader_group_protocol=reader_protocol,
        reader_max_poll_interval_ms=reader_max_poll,
    )


def _acks_rank(acks: str) -> int:
    return ACKS_ORDER.index(acks) if acks in ACKS_ORDER else len(ACKS_ORDER)


def _group(consumer: Mapping[str, Any], default: str | None) -> str | None:
    """The group of one workload.consumers entry: its own ``group_id`` or consumer_config
    group.id, else consumer_config's; but none in assign mode (it never joins) and its own
    in restart mode (alone in ``<group.id>-<id>``, workloads/consumer.py)."""
    own = consumer.get("group_id") or (consumer.get("consumer_config") or {}).get("group.id")
    mode = consumer.get("mode")
    if mode == "assign":
        return None
    if mode == "restart":
        return f"{default}-{consumer['id']}" if default else None
    return str(own) if own else default


#: Spark master URLs the checker can run on (a SparkContext is needed: no Spark Connect).
SPARK_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
                          r"|spark://[\w.:,-]+|yarn|k8s://\S+)$")
#: The checker's other engine: Sail, a native single-node engine run inside the checker's
#: process and driven through Spark Connect (checkers/engines.py).
SAIL_MASTER = "sail"


def spark_master_problem(master: str | None) -> str | None:
    """Why the checker cannot use ``master`` (a one-line message), or None."""
    if master is None or master == SAIL_MASTER or SPARK_MASTER.match(master):
        return None
    if master.startswith("sc://"):
        return (f"--spark-master {master}: a remote Spark Connect server is not supported (the "
                "checker needs a SparkContext, or its own Sail engine: --spark-master sail); "
                "give the cluster's spark:// master")
    return (f"--spark-master must be local[N], spark://HOST:PORT, yarn, k8s://... or sail, "
            f"got {master!r}")
