"""librdkafka#5511 on a real cluster: a transactional producer's send_offsets_to_transaction
blocks far past its timeout once the broker coordinating the consumer group is killed and
stays down past the session timeout (the brokers' 3 s: compose.config.FAST_FAULTS). The
kill's start event records the group's coordinator, the hung call names its group, and the
checker tags the call with the bug only through that evidence (the literal cases that name
nothing are in tests/checkers/test_liveness.py)."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaException
from tenacity import Retrying, stop_after_delay, wait_fixed

from chaos.user_api import ChaosSession
from compose.cluster import KafkaCluster
from contract.liveness import HUNG_CALL

TOPIC, GROUP = "offsets-hang", "offsets-hang-group"
TIMEOUT_S = 3.0  # the call's own: hung past 3 + 5 s


def _events(chaos: ChaosSession, kind: str) -> list[dict[str, Any]]:
    lines = (chaos.run_dir / "history" / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] == kind]


@pytest.mark.chaos(accept_known=["librdkafka#5511"])
def test_send_offsets_hangs_once_its_group_coordinator_is_fenced(
        chaos: ChaosSession, kafka_cluster: KafkaCluster) -> None:
    kafka_cluster.create_topic(TOPIC, partitions=2, replication_factor=3,
                               config={"min.insync.replicas": "2"})
    upstream = chaos.producer(acks="all")
    for i in range(20):
        upstream.produce(TOPIC, b"in-%d" % i)
    assert upstream.flush(30) == 0
    consumer = chaos.consumer({"group.id": GROUP, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False,
                               "isolation.level": "read_committed"})
    consumer.subscribe([TOPIC])
    for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0), reraise=True):
        with attempt:
            assert consumer.consume(20, 1.0)
    producer = chaos.producer({"acks": "all", "transactional.id": "offsets-hang",
                               "transaction.timeout.ms": 15000})
    producer.init_transactions(30)

    def offsets_txn() -> None:
        producer.begin_transaction()
        producer.produce(TOPIC, b"out")
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), TIMEOUT_S)

    offsets_txn()  # the producer learns the group's coordinator
    producer.commit_transaction(30)
    coordinator = kafka_cluster.group_coordinator(GROUP)
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            offsets_txn()
            outcome["returned"] = True
        except Exception as e:  # noqa: BLE001 - any end of the call will do
            outcome["error"] = repr(e)

    with chaos.kill(coordinator):
        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        # the watch records the call while it still blocks (past 3 s + the 5 s slack)
        for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.5), reraise=True):
            with attempt:
                assert _events(chaos, HUNG_CALL), outcome
    worker.join(90)
    assert not worker.is_alive(), "send_offsets_to_transaction never returned after the heal"
    kill = [e for e in _events(chaos, "kill") if e["phase"] == "start"]
    assert kill[0]["detail"]["coordinators"] == {GROUP: coordinator}
    with contextlib.suppress(KafkaException):  # fenced, or left for the abort
        producer.abort_transaction(30)
    result = chaos.check(TOPIC, isolation_level="read_committed")
    assert result.results is not None, result.describe()
    hung = result.results["anomalies"]["hung-call"]
    assert hung["count"] >= 1, result.describe()
    for example in hung["examples"]:
        assert example["call"] == "send_offsets_to_transaction"
        assert example["group"] == GROUP
        assert example["known_bug"]["id"] == "librdkafka#5511", example
    assert hung["accepted"] == hung["count"]
    assert result.valid is True, result.describe()
