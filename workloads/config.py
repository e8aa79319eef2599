"""Typed configuration of the workload: producers, consumers, and which consumers to run.

Each dataclass renders the librdkafka properties it stands for with Kafka's own names
(``kafka_config()``), which is also what run.json records as producer_config/consumer_config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from contract.settings import DEFAULT_GROUP_ID, ProducerSettingsError, producer_settings

Acks = Literal["0", "1", "all"]
Partitioner = Literal["round-robin", "random"]


class WorkloadConfigError(ValueError):
    """A workload setting is out of range; the message is one line for the user."""


@dataclass
class ProducerConfig:
    """What each producer process does and how its librdkafka client is set up.

    ``rate`` is records/s per producer (0: as fast as the client takes them). A producer stops
    at ``duration_s``, after ``max_records`` (0: no limit), or when told to stop. ``partitions``
    restricts the partitions written (None: all, round-robin or random by ``partitioner``).
    ``extra`` passes any other librdkafka property through unchanged.
    """

    acks: Acks = "all"
    # None: on exactly when acks=all (like Kafka's Java client, whose default is on unless a
    # conflicting setting such as acks=1 is given). True with acks other than all is refused.
    enable_idempotence: bool | None = None
    retries: int | None = None  # None: librdkafka's default (INT32_MAX)
    max_in_flight: int = 5
    linger_ms: float = 5.0
    batch_size: int = 1_000_000
    compression_type: str = "none"
    delivery_timeout_ms: int = 30_000
    request_timeout_ms: int = 10_000
    rate: float = 1000.0
    record_size: int = 100
    duration_s: float = 60.0
    max_records: int = 0
    partitioner: Partitioner = "round-robin"
    partitions: list[int] | None = None
    transactional: bool = False
    transactional_id_prefix: str = "kc-txn"
    records_per_txn: int = 10
    abort_share: float = 0.1
    transaction_timeout_ms: int = 60_000
    # producer id -> the consumer group whose positions its transactions send (run option
    # send_offsets; workloads/txn_offsets.py); a producer not named sends none
    offsets_groups: dict[int, str] = field(default_factory=dict)
    # producer id -> seconds it stays idle from its start (its client created and connected,
    # nothing sent) before it writes; plain producers only
    idle_s: dict[int, float] = field(default_factory=dict)
    # How long the end of the produce phase waits for outstanding deliveries before purging.
    flush_timeout_s: float = 10.0
    # False: no history at all (benchmark of the recording overhead only).
    record_history: bool = True
    history_chunk_rows: int = 50_000
    history_flush_interval_s: float = 2.0
    seed: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        """Raises WorkloadConfigError with a one-line reason for the first bad value."""
        self._producer_settings()
        if self.rate < 0:
            raise WorkloadConfigError(f"rate must be >= 0, got {self.rate}")
        if self.duration_s <= 0:
            raise WorkloadConfigError(f"duration must be > 0 s, got {self.duration_s}")
        if self.record_size < 1:
            raise WorkloadConfigError(f"record size must be >= 1, got {self.record_size}")
        if self.transactional and self.records_per_txn < 1:
            raise WorkloadConfigError("records per transaction must be >= 1")
        if not 0.0 <= self.abort_share <= 1.0:
            raise WorkloadConfigError(f"abort share must be in [0, 1], got {self.abort_share}")

    def _producer_settings(self) -> tuple[str, bool]:
        # acks and idempotence by the contract's one set of rules (also the run config's)
        try:
            return producer_settings(self.acks, self.enable_idempotence, self.transactional,
                                     self.extra)
        except ProducerSettingsError as e:
            raise WorkloadConfigError(str(e)) from None

    @property
    def idempotent(self) -> bool:
        """Whether the client runs idempotent (explicitly, by default, or for transactions);
        raises WorkloadConfigError for settings the client would refuse."""
        return self._producer_settings()[1]

    def transactional_id(self, producer: int) -> str:
        return f"{self.transactional_id_prefix}-{producer}"

    def kafka_config(self, producer: int | None = None) -> dict[str, str]:
        """librdkafka properties (Kafka names). Without ``producer``, a transactional.id is
        shown as its pattern ``<prefix>-{producer}``."""
        conf: dict[str, str] = {
            "acks": self.acks,
            "enable.idempotence": _b(self.idempotent),
            "max.in.flight.requests.per.connection": str(self.max_in_flight),
            "linger.ms": _num(self.linger_ms),
            "batch.size": str(self.batch_size),
            "compression.type": self.compression_type,
            "delivery.timeout.ms": str(self.delivery_timeout_ms),
            "request.timeout.ms": str(self.request_timeout_ms),
        }
        if self.retries is not None:
            conf["retries"] = str(self.retries)
        if self.transactional:
            conf["transactional.id"] = (self.transactional_id(producer) if producer is not None
                                        else f"{self.transactional_id_prefix}-{{producer}}")
            conf["transaction.timeout.ms"] = str(self.transaction_timeout_ms)
        conf.update({k: str(v) for k, v in self.extra.items()})
        return conf


@dataclass
class ConsumerConfig:
    """How the run's consumers (not the drain) are set up; ``extra`` passes through."""

    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    group_id: str = DEFAULT_GROUP_ID
    # classic, or consumer (KIP-848: the broker assigns, heartbeats and session timeouts
    # are the group's broker-side settings, so the client must not set them)
    group_protocol: Literal["classic", "consumer"] = "classic"
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 1000
    # Short, so a consumer on a dead broker's side is replaced quickly (rebalances happen).
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1000
    fetch_wait_max_ms: int = 100
    max_poll_records: int = 500  # records per consume() call
    poll_timeout_s: float = 0.2
    # restart mode: the least time between two restarts of a consumer (it restarts only once
    # it has caught up, so the close commits the position right after a partition's end)
    restart_interval_s: float = 3.0
    restart_pause_s: float = 1.0  # restart mode: from the close to the new consumer
    # restart mode: how long the caught-up consumer goes without consume() before its close
    # (an application finishing its work before it shuts down); librdkafka's fetcher fills
    # its queue meanwhile (librdkafka#3400)
    restart_close_delay_s: float = 0.0
    history_chunk_rows: int = 50_000
    history_flush_interval_s: float = 2.0
    extra: dict[str, str] = field(default_factory=dict)

    def kafka_config(self) -> dict[str, str]:
        """librdkafka properties (Kafka names) shared by every consumer of the run."""
        conf = {
            "isolation.level": self.isolation_level,
            # librdkafka's default is latest; a checker needs everything. Truncation resets
            # (KAFKA-FACTS §3.5) then seek silently, which is what we want to observe.
            "auto.offset.reset": "earliest",
            "group.id": self.group_id,
            "enable.auto.commit": _b(self.enable_auto_commit),
            "auto.commit.interval.ms": str(self.auto_commit_interval_ms),
            "session.timeout.ms": str(self.session_timeout_ms),
            "heartbeat.interval.ms": str(self.heartbeat_interval_ms),
            "fetch.wait.max.ms": str(self.fetch_wait_max_ms),
        }
        if self.group_protocol == "consumer":
            conf["group.protocol"] = "consumer"
            del conf["session.timeout.ms"], conf["heartbeat.interval.ms"]
        conf.update({k: str(v) for k, v in self.extra.items()})
        return conf


@dataclass
class ConsumerSpec:
    """One consumer of the run: its reader id (``c0``), its mode (assign, subscribe, or
    restart: a group consumer that restarts itself, workloads/consumer.py), and for ``assign``
    mode the partitions it reads (None: all)."""

    id: str
    mode: Literal["assign", "subscribe", "restart"] = "assign"
    partitions: list[int] | None = None


def _b(v: bool) -> str:
    return "true" if v else "false"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)
