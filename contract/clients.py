"""The clients a run's workload can write and read with, and how each one's errors are read.

A run's producers and consumers are all one client: ``confluent-kafka`` (librdkafka, in
Python processes of our own), or one in another language in a driver process that reports
to a Python recorder (``contract.driver_protocol``): ``java`` (Kafka's own
``kafka-clients``), ``franz-go`` or ``sarama``. ``--client KIND:VERSION``
names it; ``--client-version V`` is ``confluent-kafka:V``. The history is the same whichever
client wrote it; run.json's ``versions.client`` / ``versions.client_version`` say which.

Each client's error names map to a write outcome by one rule: only an error that proves the
record was never appended is ``fail``; every other error, including names this table does
not know, is ``info`` (an ambiguous outcome is never ``fail``: calling a written record
failed would raise a false ``failed-visible``). The reasons are beside each name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contract.faults import POLL_STALL
from contract.known_bugs import version_tuple

#: The librdkafka client (the confluent-kafka Python package); the default.
CONFLUENT_KAFKA = "confluent-kafka"
#: Kafka's Java client (org.apache.kafka:kafka-clients), driven by workloads/java.
JAVA = "java"
#: franz-go (github.com/twmb/franz-go) and sarama (github.com/IBM/sarama), Go clients driven
#: by workloads/go.
FRANZ_GO = "franz-go"
SARAMA = "sarama"
CLIENT_KINDS: tuple[str, ...] = (CONFLUENT_KAFKA, JAVA, FRANZ_GO, SARAMA)
#: The clients that need a version (their drivers are built against it).
_NEEDS_VERSION = {JAVA: "java:4.1.1", FRANZ_GO: "franz-go:1.22.3", SARAMA: "sarama:1.61.1"}
#: Every client the workload drives, each at the version the suite runs (explore draws them).
EVERY_CLIENT: tuple[str, ...] = (CONFLUENT_KAFKA, *_NEEDS_VERSION.values())

_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.-]?(a|b|rc|post|dev)\d+)?$")


class ClientSpecError(ValueError):
    """A ``--client`` value that names no client we drive; the message is one line."""


@dataclass(frozen=True)
class ClientSpec:
    """A client and its version (None: the one this installation carries, for
    confluent-kafka only)."""

    kind: str = CONFLUENT_KAFKA
    version: str | None = None

    def __str__(self) -> str:
        return self.kind if self.version is None else f"{self.kind}:{self.version}"

    @property
    def librdkafka(self) -> bool:
        """Whether librdkafka writes and reads the records (its known bugs can apply)."""
        return self.kind == CONFLUENT_KAFKA


def parse_client(text: str) -> ClientSpec:
    """``KIND[:VERSION]`` -> ClientSpec; every client but confluent-kafka needs its version."""
    kind, _, version = text.strip().partition(":")
    if kind not in CLIENT_KINDS:
        raise ClientSpecError(f"--client: unknown client {kind!r} (one of "
                              f"{', '.join(CLIENT_KINDS)}, as KIND:VERSION)")
    if version and not _VERSION.match(version):
        raise ClientSpecError(f"--client: {version!r} is not a version (e.g. {kind}:4.1.1)")
    if kind == JAVA and not version:
        raise ClientSpecError("--client: the Java client needs its version, e.g. java:4.1.1")
    if kind in _NEEDS_VERSION and not version:
        raise ClientSpecError(f"--client: {kind} needs its version, e.g. {_NEEDS_VERSION[kind]}")
    return ClientSpec(kind, version or None)


#: Error names that prove the record was not (and will never be) appended, per client.
DEFINITE_FAILURES: dict[str, frozenset[str]] = {
    # librdkafka error names (KafkaError.name()). Not _PURGE_QUEUE: a message whose first
    # request got no answer waits for its retry in the same queue, so a purge then may hit
    # one that was appended. Not _MSG_TIMED_OUT: it may have been sent.
    CONFLUENT_KAFKA: frozenset({
        "_TIMED_OUT_QUEUE",      # timed out in the local queue: never sent
        "_MSG_SIZE_TOO_LARGE",   # refused locally
        "_UNKNOWN_PARTITION",    # refused locally
        "_UNKNOWN_TOPIC",        # refused locally
        "_INVALID_ARG",
        "_STATE",                # produce refused by the (transactional) producer's state
        "_REFUSED",              # produce() raised: never queued
        "NOT_ENOUGH_REPLICAS",   # the leader checks the ISR before appending
        "LEADER_NOT_AVAILABLE",  # no leader: nobody could have appended
        "MSG_SIZE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE",
        "UNKNOWN_TOPIC_OR_PART",
        "INVALID_REQUIRED_ACKS",
        "INVALID_RECORD",
        "CORRUPT_MESSAGE",
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    }),
    # The Java client's exception class names (the callback's exception, its simple name).
    # Only errors the client never retries: the final error of a retried batch (e.g.
    # NotEnoughReplicasException once delivery.timeout.ms has passed) may follow an
    # earlier attempt that was appended but whose answer was lost. Not TimeoutException
    # (expired batches may be in flight), nor KafkaException "closed forcefully".
    JAVA: frozenset({
        "Refused",                         # the callback ran inside send(): never queued
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTopicException",
        "InvalidRequiredAcksException",
        "InvalidRecordException",
        "SerializationException",
        "TopicAuthorizationException",
        "ClusterAuthorizationException",
        "TransactionalIdAuthorizationException",
    }),
    # franz-go (workloads/go/franz): kerr names (Kafka's), kgo's errors by their Go name.
    # Every error comes through the record's promise, also one refused before it was
    # buffered (no refused line). A partition's failed batch fails every batch buffered
    # behind it with the same error (failAllRecords), those in flight too, and the
    # retriable errors are retried until ErrRecordTimeout/ErrRecordRetries. So only errors
    # that every attempt of every batch of the partition would get, before any append,
    # are definite; not MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_RECORD nor
    # CORRUPT_MESSAGE (one batch's content: a non-idempotent later batch in flight may
    # have been appended), not NOT_ENOUGH_REPLICAS / UNKNOWN_TOPIC_OR_PARTITION (the last
    # answer of retries), not ErrRecordTimeout/ErrRecordRetries/ErrClientClosed (in flight
    # maybe).
    FRANZ_GO: frozenset({
        "ErrMaxBuffered",                         # refused before buffering: never sent
        "INVALID_REQUIRED_ACKS",                  # the producer's acks: every request refused
        "INVALID_TOPIC_EXCEPTION",                # the topic's name: every request refused
        "TOPIC_AUTHORIZATION_FAILED",             # checked before the append, never retried
        "CLUSTER_AUTHORIZATION_FAILED",           # idempotent write refused: never produced
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    }),
    # sarama (workloads/go/sarama): KError by Kafka's names, sarama's errors by their Go
    # name. Every error comes on the Errors channel, also one refused before it was sent
    # (no refused line). Retriable broker errors are retried Producer.Retry.Max times and
    # the last one returned (any attempt before it may have been appended), and a
    # non-idempotent producer re-batches retried messages, so a batch-content error may
    # follow an appended attempt: not NOT_ENOUGH_REPLICAS, CORRUPT_MESSAGE,
    # MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_RECORD. Not ErrShuttingDown (also
    # a retried batch's at close), ErrOutOfBrokers, ErrNotConnected, ErrIncompleteResponse.
    SARAMA: frozenset({
        "ConfigurationError",                     # refused by the dispatcher: never sent
        "ErrInvalidPartition",                    # the partitioner refused it: never sent
        "INVALID_REQUIRED_ACKS",                  # the producer's acks: every request refused
        "INVALID_TOPIC_EXCEPTION",                # the topic's name: every request refused
        "TOPIC_AUTHORIZATION_FAILED",             # checked before the append, never retried
        "CLUSTER_AUTHORIZATION_FAILED",           # idempotent write refused: never produced
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    }),
}


def classify_error(kind: str, name: str | None) -> str:
    """``ok`` for no error, ``fail`` for a definite failure of client ``kind``, ``info``
    otherwise (DESIGN.md §3)."""
    if name is None:
        return "ok"
    return "fail" if name in DEFINITE_FAILURES.get(kind, frozenset()) else "info"


#: The first franz-go with a public KIP-848 opt-in (kgo's ServerSideBalancer); sarama has none.
FRANZ_GO_KIP848 = (1, 22, 0)


def unsupported(spec: ClientSpec, *, transactional: bool, partitioner: str,
                consumer_modes: list[str], group_protocol: str = "classic") -> str | None:
    """Why the workload cannot run these settings with this client (one line), or None.
    confluent-kafka runs everything; the drivers in other languages do not run yet the
    random partitioner, only the Java client transactions and restart-mode consumers, and
    the Go clients KIP-848 groups only where they have them (subscribe- and restart-mode
    consumers use the group protocol)."""
    if spec.kind == CONFLUENT_KAFKA:
        return None
    in_groups = {"subscribe", "restart"} & set(consumer_modes)
    if group_protocol == "consumer" and in_groups and (spec.kind == SARAMA or (
            spec.kind == FRANZ_GO and version_tuple(spec.version) < FRANZ_GO_KIP848)):
        return (f"--client {spec}: no KIP-848 consumer (--group-protocol consumer): "
                + ("sarama has none" if spec.kind == SARAMA else "franz-go has one from 1.22.0"))
    if transactional and spec.kind != JAVA:
        return (f"--client {spec}: transactions are driven with confluent-kafka and java "
                f"only, so far")
    if partitioner != "round-robin":
        return f"--client {spec}: only the round-robin partitioner"
    if "restart" in consumer_modes and spec.kind != JAVA:
        return (f"--client {spec}: consumer mode restart is driven with confluent-kafka "
                f"and java only, so far (assign or subscribe)")
    return None


def fault_unsupported(spec: ClientSpec, kinds: tuple[str, ...] | list[str]) -> str | None:
    """Why a run of this client cannot take these fault kinds (one line), or None: a
    poll-stall needs a driver that stops its poll loop on request and says when its last
    poll returned, which only the confluent-kafka workload does so far (the drivers in
    other languages answer consumer-down only)."""
    if spec.kind != CONFLUENT_KAFKA and POLL_STALL in kinds:
        return f"--client {spec}: the poll-stall fault is driven with confluent-kafka only, so far"
    return None
