"""Outcome classification and configuration rendering (unit)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from workloads.config import ConsumerConfig, ProducerConfig, WorkloadConfigError
from workloads.outcomes import FAIL, INFO, OK, classify


@pytest.mark.parametrize("code,outcome", [
    (KafkaError._TIMED_OUT_QUEUE, FAIL),
    (KafkaError._PURGE_QUEUE, INFO),  # a queued retry may have been appended
    (KafkaError.NOT_ENOUGH_REPLICAS, FAIL),
    (KafkaError.MSG_SIZE_TOO_LARGE, FAIL),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, FAIL),
    (KafkaError.TOPIC_AUTHORIZATION_FAILED, FAIL),
    (KafkaError._MSG_TIMED_OUT, INFO),
    (KafkaError._TIMED_OUT, INFO),
    (KafkaError._TRANSPORT, INFO),
    (KafkaError.REQUEST_TIMED_OUT, INFO),
    (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, INFO),
    (KafkaError.NOT_LEADER_FOR_PARTITION, INFO),
    (KafkaError._PURGE_INFLIGHT, INFO),
    (KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, INFO),
    (KafkaError._FATAL, INFO),
    (KafkaError.UNKNOWN, INFO),
])
def test_classification(code: int, outcome: str) -> None:
    assert classify(KafkaError(code)) == outcome


def test_no_error_is_ok() -> None:
    assert classify(None) == OK


def test_producer_kafka_config_uses_kafka_names() -> None:
    conf = ProducerConfig(acks="all", linger_ms=20, compression_type="lz4").kafka_config()
    assert conf["acks"] == "all"
    assert conf["enable.idempotence"] == "true"
    assert conf["linger.ms"] == "20"
    assert conf["compression.type"] == "lz4"
    assert conf["delivery.timeout.ms"] == "30000"
    assert "transactional.id" not in conf


def test_idempotence_follows_acks_unless_explicit() -> None:
    assert ProducerConfig(acks="1").kafka_config()["enable.idempotence"] == "false"
    with pytest.raises(WorkloadConfigError):
        ProducerConfig(acks="1", enable_idempotence=True).validate()
    assert ProducerConfig(enable_idempotence=False).kafka_config()["enable.idempotence"] == \
        "false"


def test_transactional_config() -> None:
    cfg = ProducerConfig(transactional=True, transactional_id_prefix="x")
    assert cfg.kafka_config(3)["transactional.id"] == "x-3"
    assert cfg.kafka_config()["transactional.id"] == "x-{producer}"
    assert cfg.kafka_config()["enable.idempotence"] == "true"
    with pytest.raises(WorkloadConfigError):
        ProducerConfig(transactional=True, acks="1").validate()


def test_consumer_kafka_config() -> None:
    conf = ConsumerConfig(isolation_level="read_uncommitted").kafka_config()
    assert conf["isolation.level"] == "read_uncommitted"
    assert conf["auto.offset.reset"] == "earliest"
