"""Recorded clients and the test-body fault API without a cluster: the identity header, the
read recorder's header fallback, the producer's recording of unanswered attempts, and the
argument checks that happen before any fault touches a cluster."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Message

from contract.events import EventLog
from nemesis.cluster_faults import ClusterFaults, target_spec
from workloads.consumer import ReadRecorder
from workloads.record import (
    IDENTITY_HEADER,
    SOURCE_HEADER,
    decode_header,
    encode,
    identity_header,
    parse_identity,
    source_of,
)
from workloads.recording import RecordingConsumer, RecordingProducer, plain_config
from workloads.write_recorder import WriteRecorder


def _rows(path: Path) -> list[dict[str, Any]]:
    return ds.dataset(path, format="parquet").to_table().to_pylist()


# ---------------------------------------------------------------------- the header
def test_identity_header_round_trip_and_checksum() -> None:
    value = b'{"order": 17}'
    raw = identity_header(3, 41, value)
    assert raw == b"3|41|%08x" % zlib.crc32(value)
    assert decode_header([("other", b"x"), (IDENTITY_HEADER, raw)], value) == (3, 41, True)
    # A changed value no longer matches the checksum: the identity is kept, valid is False.
    assert decode_header([(IDENTITY_HEADER, raw)], value + b" ") == (3, 41, False)


def test_identity_header_given_without_checksum_and_malformed() -> None:
    assert parse_identity(b"2|9") == (2, 9, None)
    assert decode_header([(IDENTITY_HEADER, b"2|9")], b"anything") == (2, 9, True)
    for bad in (b"", b"2", b"2|x", b"-1|3", b"2|3|abc", b"1|2|3|4"):
        assert parse_identity(bad) is None, bad
        assert decode_header([(IDENTITY_HEADER, bad)], b"v") == (None, None, False)
    assert decode_header(None, b"v") == (None, None, False)


def test_read_recorder_takes_the_identity_from_the_header_when_the_value_is_not_ours(
        tmp_path: Path) -> None:
    value = b"an application's own bytes"
    own = Message(topic="orders", partition=0, offset=7, value=value,
                  headers=[(IDENTITY_HEADER, identity_header(1, 5, value))])
    # The workload's own value wins over any header (its checksum covers the padding).
    ours = Message(topic="orders", partition=0, offset=8, value=encode(2, 6),
                   headers=[(IDENTITY_HEADER, b"9|9")])
    unknown = Message(topic="orders", partition=0, offset=9, value=b"no identity")
    rec = ReadRecorder(tmp_path, "c0", "subscribe")
    rec.record(1, [own, ours, unknown])
    rec.close()
    rows = sorted(_rows(tmp_path / "history" / "reads.parquet"), key=lambda r: r["offset"])
    assert [(r["offset"], r["producer"], r["seq"], r["valid"]) for r in rows] == [
        (7, 1, 5, True), (8, 2, 6, True), (9, None, None, False)]


# ---------------------------------------------------------------------- recorded clients
NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 60000,
           "socket.connection.setup.timeout.ms": 1000, "log_level": 0}


def test_producer_records_every_attempt_when_no_broker_answers(tmp_path: Path) -> None:
    # Nothing was ever sent: close() purges the queue; purged-from-the-queue is recorded as
    # indeterminate (a queued retry may have been appended: workloads.outcomes), with the
    # seq the header carried.
    p = RecordingProducer(NOWHERE, tmp_path, producer_id=4)
    p.produce("orders", b"a")
    p.produce("orders", b"b", partition=2)
    p.produce("audit", "c")  # another topic: its own part files, the producer's seq
    p.close(timeout=0.5)
    rows = sorted(_rows(tmp_path / "history" / "writes.parquet"), key=lambda r: r["seq"])
    assert [(r["producer"], r["seq"], r["op_id"], r["topic"], r["partition"], r["outcome"],
             r["error"]) for r in rows] == [
        (4, 0, (4 << 40) | 0, "orders", None, "info", "_PURGE_QUEUE"),
        (4, 1, (4 << 40) | 1, "orders", 2, "info", "_PURGE_QUEUE"),
        (4, 2, (4 << 40) | 2, "audit", None, "info", "_PURGE_QUEUE")]
    assert all(r["invoke_ns"] > 0 for r in rows)
    assert {t: s["attempts"] for t, s in p.stats().items()} == {"orders": 2, "audit": 1}
    p.close()  # idempotent: nothing written twice
    assert len(_rows(tmp_path / "history" / "writes.parquet")) == 3


def test_write_recorder_takes_a_partitioner_chosen_partition_from_the_report(
        tmp_path: Path) -> None:
    rec = WriteRecorder(tmp_path, 0, "orders", writer="p0-orders")
    rec.invoked(0, None, 1)  # produce() without a partition: the partitioner chooses
    rec.invoked(1, 1, 2)  # an explicit partition stays as given
    rec.on_delivery(0, None, Message(topic="orders", partition=2, offset=10))
    rec.on_delivery(1, None, Message(topic="orders", partition=1, offset=11))
    rec.close()
    rows = sorted(_rows(tmp_path / "history" / "writes.parquet"), key=lambda r: r["seq"])
    assert [(r["seq"], r["partition"], r["offset"], r["outcome"]) for r in rows] == [
        (0, 2, 10, "ok"), (1, 1, 11, "ok")]
    assert [p.name for p in (tmp_path / "history" / "writes.parquet").iterdir()] == [
        "part-p0-orders-000000.parquet"]


def test_producer_takes_a_given_identity_and_refuses_another_producers(tmp_path: Path) -> None:
    p = RecordingProducer(NOWHERE, tmp_path, producer_id=1)
    try:
        p.produce("orders", b"x", headers={IDENTITY_HEADER: b"1|100"})
        p.produce("orders", b"y")  # continues after the highest given seq
        with pytest.raises(ValueError, match="kc-id"):
            p.produce("orders", b"z", headers=[(IDENTITY_HEADER, b"2|0")])
    finally:
        p.close(timeout=0.2)
    seqs = sorted(r["seq"] for r in _rows(tmp_path / "history" / "writes.parquet"))
    assert seqs == [100, 101]


def test_source_header_is_recorded_with_the_read(tmp_path: Path) -> None:
    value = b"invoice"
    msg = Message(topic="invoices", partition=0, offset=3, value=value,
                  headers=[(IDENTITY_HEADER, identity_header(5, 9, value)),
                           (SOURCE_HEADER, b"0|41")])
    plain = Message(topic="invoices", partition=0, offset=4, value=value,
                    headers=[(IDENTITY_HEADER, identity_header(5, 10, value))])
    rec = ReadRecorder(tmp_path, "c0", "subscribe")
    rec.record(1, [msg, plain])
    rec.close()
    rows = _rows(tmp_path / "history" / "reads.parquet")
    assert [(r["producer"], r["seq"], r["src_producer"], r["src_seq"]) for r in rows] == [
        (5, 9, 0, 41), (5, 10, None, None)]
    assert source_of([(SOURCE_HEADER, b"junk")]) == (None, None)


def test_producer_stamps_the_source_and_refuses_one_without_identity(tmp_path: Path) -> None:
    p = RecordingProducer(NOWHERE, tmp_path, producer_id=1)
    try:
        p.produce("invoices", b"x", source=(0, 41))
        with pytest.raises(ValueError, match="identity"):
            p.produce("invoices", b"y", source=Message(topic="orders", value=b"not ours"))
    finally:
        p.close(timeout=0.2)
    assert [r["seq"] for r in _rows(tmp_path / "history" / "writes.parquet")] == [0]


def test_recorded_clients_refuse_what_they_cannot_record(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="drain"):
        RecordingConsumer({**NOWHERE, "group.id": "g"}, tmp_path, reader="drain")


def test_plain_config_keeps_settings_and_drops_callbacks() -> None:
    conf = {"acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "error_cb": print}
    assert plain_config(conf) == {"acks": "all", "enable.idempotence": "true",
                                  "linger.ms": "5"}


# ---------------------------------------------------------------------- the fault API
def test_target_specs() -> None:
    assert target_spec("leader", 2) == "leader:2"
    assert target_spec("leader") == "leader"
    assert target_spec("followers", 1) == "followers:1"
    assert target_spec(3) == "3"
    assert target_spec("random") == "random"
    assert target_spec("1,3") == "1,3"
    for bad in ("the-leader", "leader:x", True):
        with pytest.raises(ValueError):
            target_spec(bad)


def test_bad_fault_requests_fail_before_touching_the_cluster(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    # No cluster at all: every one of these must be refused before one is needed.
    faults = ClusterFaults(None, events)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown fault kind"):
        faults.fault("explode", 1)
    with pytest.raises(ValueError, match="no parameter 'delay'"):
        faults.fault("slow", 1, delay=5)
    with pytest.raises(ValueError, match="unknown target"):
        faults.kill("somebody")
    with pytest.raises(ValueError, match="not a random fault kind"):
        faults.random(["explode"])
    with pytest.raises(ValueError, match="> 0"):
        faults.random(["kill"], interval=0)
    assert faults.heal() == []
    events.close()
    assert (tmp_path / "events.jsonl").read_text() == ""
