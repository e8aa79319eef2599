"""The segment reader on log directories written by real Kafka brokers (issue 11), not only
on the hand-written writer: batches compressed with gzip, snappy, lz4 and zstd by
librdkafka, idempotent and transactional batches, and the transaction markers (control
records). Every record produced is read back from every replica, and the replicas agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from confluent_kafka import Producer
from tenacity import Retrying, stop_after_delay, wait_fixed

from checkers.divergence import check_divergence
from checkers.runfiles import RunDir
from checkers.segments import (
    BATCH_HEADER,
    Batch,
    batch_records,
    iter_batches,
)
from compose.cluster import KafkaCluster
from compose.config import ClusterConfig

pytestmark = pytest.mark.cluster

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
N = 300
PAD = b"x" * 200  # compressible: librdkafka sends a batch uncompressed when that is smaller


def _value(name: str, i: int) -> bytes:
    return f"{name}-{i:05d}-".encode() + PAD


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory,
         docker_client: docker.DockerClient) -> Iterator[Path]:
    """A 3-broker cluster's log directories after the writes below, copied out once every
    replica holds every offset."""
    cfg = ClusterConfig(brokers=3)
    root = tmp_path_factory.mktemp("real-logs")
    with KafkaCluster(cfg) as cluster:
        topics = [*(f"c-{c}" for c in CODECS), "idem", "txn"]
        for t in topics:
            cluster.create_topic(t, partitions=1, replication_factor=3,
                                 config={"min.insync.replicas": "2"})
        boot = cluster.bootstrap_servers
        errors: list[str] = []

        def cb(err, _msg) -> None:  # noqa: ANN001 - librdkafka callback
            if err is not None:
                errors.append(str(err))

        for codec in CODECS:
            p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 20,
                          "compression.type": codec, "batch.num.messages": 50})
            for i in range(N):
                p.produce(f"c-{codec}", _value(codec, i), partition=0, on_delivery=cb)
            assert p.flush(60) == 0
        idem = Producer({"bootstrap.servers": boot, "enable.idempotence": True,
                         "linger.ms": 20, "compression.type": "lz4"})
        for i in range(N):
            idem.produce("idem", _value("idem", i), partition=0, on_delivery=cb)
        assert idem.flush(60) == 0
        txn = Producer({"bootstrap.servers": boot, "transactional.id": "seg-test",
                        "linger.ms": 5, "compression.type": "zstd"})
        txn.init_transactions(60)
        for k, (count, commit) in enumerate([(10, True), (10, False), (5, True)]):
            txn.begin_transaction()
            for i in range(count):
                txn.produce("txn", _value(f"txn{k}", i), partition=0, on_delivery=cb)
            if commit:
                txn.commit_transaction(60)
            else:
                txn.flush(60)
                txn.abort_transaction(60)
        # This frame lives until the module's last test: its clients must not outlive the
        # cluster (they kept reconnecting to its addresses, which other lanes' clusters
        # take over, in suite 100).
        del p, idem, txn
        assert errors == []
        ends = {t: cluster.end_offsets(t)[0] for t in topics}
        # followers fetch the tail (and the markers) a moment after the acknowledgement
        for attempt in Retrying(stop=stop_after_delay(90), wait=wait_fixed(1), reraise=True):
            with attempt:
                dest = root / f"try-{attempt.retry_state.attempt_number}"
                assert cluster.collect(dest / "logs", data=True) == []
                for t in topics:
                    for broker in sorted(cluster.brokers):
                        got = _replica_end(dest, broker, t)
                        assert got == ends[t], (t, broker, got, ends[t])
    yield dest
    left = docker_client.containers.list(
        all=True, filters={"label": f"io.kafka-chaos.cluster={cfg.name}"})
    assert not left


def _batches(run: Path, broker: int, topic: str) -> list[Batch]:
    d = run / "logs" / "data" / f"broker-{broker}" / f"{topic}-0"
    out: list[Batch] = []
    for seg in sorted(d.glob("*.log")):
        out.extend(iter_batches(seg.read_bytes()))
    return out


def _replica_end(run: Path, broker: int, topic: str) -> int:
    return max((b.last_offset + 1 for b in _batches(run, broker, topic)), default=0)


def _producer_id(b: Batch) -> int:
    return int(BATCH_HEADER.unpack_from(b.data)[9])


@pytest.mark.parametrize("codec", list(CODECS))
def test_compressed_batches_decode_to_what_was_produced(logs: Path, codec: str) -> None:
    batches = _batches(logs, 1, f"c-{codec}")
    assert {b.attributes & 0x07 for b in batches} == {CODECS[codec]}
    assert any(b.last_offset > b.base_offset for b in batches), "only one-record batches"
    records = [r for b in batches for r in batch_records(b)]
    assert [r.offset for r in records] == list(range(N))
    expected = [(_value(codec, i)[:16].hex(), len(_value(codec, i))) for i in range(N)]
    assert [(r.value_prefix, r.size) for r in records] == expected
    assert not any(r.digest.startswith("crc:") for r in records)  # decoded, not by CRC


def test_idempotent_batches(logs: Path) -> None:
    batches = _batches(logs, 2, "idem")
    assert batches and all(_producer_id(b) >= 0 for b in batches)
    assert not any(b.is_transactional for b in batches)
    records = [r for b in batches for r in batch_records(b)]
    assert [(r.offset, r.value_prefix) for r in records] == [
        (i, _value("idem", i)[:16].hex()) for i in range(N)]


def test_transactional_batches_and_control_records(logs: Path) -> None:
    batches = _batches(logs, 3, "txn")
    assert all(b.is_transactional for b in batches)
    control = [b for b in batches if b.is_control]
    assert len(control) == 3  # commit, abort, commit
    records = [r for b in batches for r in batch_records(b)]
    assert len(records) == 25 + 3 and [r.offset for r in records] == list(range(28))
    marks = [r for r in records if r.control]
    assert [r.offset for r in marks] == [10, 21, 27]
    # a marker's key holds its type (commit 1, abort 0): both commits alike, the abort not
    assert marks[0].digest == marks[2].digest != marks[1].digest
    data = [r.value_prefix for r in records if not r.control]
    assert data == [_value(f"txn{k}", i)[:16].hex() for k, n in enumerate((10, 10, 5))
                    for i in range(n)]


def test_replicas_written_by_kafka_do_not_diverge(logs: Path) -> None:
    res = check_divergence(RunDir(str(logs)), None)
    assert res.checked and res.count == 0, res.examples[:3]
    assert res.partitions >= 7 and res.replicas == ["broker-1", "broker-2", "broker-3"]
    assert res.offsets_compared >= N
