"""Helpers of the cluster tests: reading a topic back, waiting for processes, contracts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from tenacity import Retrying, stop_after_delay, wait_fixed

from workloads.drivers import ForeignDriver
from workloads.processes import ProcessGroup

# DESIGN.md §3, written out here (not imported) so the test checks the contract itself.
WRITES_CONTRACT = [
    ("op_id", pa.int64()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("topic", pa.string()), ("partition", pa.int32()), ("invoke_ns", pa.int64()),
    ("complete_ns", pa.int64()), ("outcome", pa.string()), ("offset", pa.int64()),
    ("error", pa.string()), ("txn", pa.string()), ("txn_outcome", pa.string()),
]
READS_CONTRACT = [
    ("reader", pa.string()), ("mode", pa.string()), ("poll", pa.int64()),
    ("read_ns", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("valid", pa.bool_()),
    # issue 14's addition: the source of a derived record (kc-src header), null otherwise
    ("src_producer", pa.int32()), ("src_seq", pa.int64()),
    # each record's place among those its poll returned
    ("poll_index", pa.int32()),
]


def wait_finished(group: ProcessGroup, timeout_s: float = 60) -> None:
    """Polls until every process of the group has exited by itself."""
    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                            reraise=True):
        with attempt:
            assert not group.alive(), f"still running: {group.alive_names()}"


def read_topic(bootstrap: str, topic: str, partitions: int,
               isolation: str = "read_uncommitted",
               timeout_s: float = 60) -> dict[tuple[int, int], bytes]:
    """Every record of the topic as {(partition, offset): value}, read to the end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kc-test-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: dict[tuple[int, int], bytes] = {}
    eof: set[int] = set()
    end = time.monotonic() + timeout_s
    try:
        while len(eof) < partitions and time.monotonic() < end:
            for m in c.consume(1000, 0.5):
                err = m.error()
                if err is None:
                    out[(m.partition(), m.offset())] = m.value()
                    eof.discard(m.partition())
                elif err.code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
    finally:
        c.close()
    assert len(eof) == partitions, "topic not read to its end in time"
    return out


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


Identity = tuple[int, int]


def acked_identities(writes: list[dict[str, Any]]) -> dict[Identity, tuple[int, int]]:
    """{(producer, seq): (partition, offset)} of every acknowledged write."""
    return {(w["producer"], w["seq"]): (w["partition"], w["offset"])
            for w in writes if w["outcome"] == "ok"}


def _seen_by_reader(run_dir: Path) -> dict[str, set[Identity]]:
    table = ds.dataset(run_dir / "history" / "reads.parquet", format="parquet").to_table(
        columns=["reader", "producer", "seq"])
    out: dict[str, set[Identity]] = {}
    for r in table.to_pylist():
        out.setdefault(r["reader"], set()).add((r["producer"], r["seq"]))
    return out


def _reader_story(run_dir: Path, reader: str) -> str:
    """What a reader did, for a failure message: its rebalance events, in order."""
    path = run_dir / "history" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    mine = [f"{e['detail'].get('what')}@poll{e['detail'].get('poll')}:"
            f"{e['detail'].get('partitions')}" for e in events
            if e.get("kind") == "rebalance" and e["detail"].get("reader") == reader]
    return f"rebalances of {reader}: {mine or 'none'}"


def wait_read(run_dir: Path, wants: dict[str, set[Identity]], timeout_s: float = 90) -> None:
    """Polls the flushed reads until every reader has read every identity it wants.

    Live consumers run on their own clocks (a group consumer first has to join); a test that
    stops them before they got there would test its own timing, not the consumer.
    """
    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                            reraise=True):
        with attempt:
            seen = _seen_by_reader(run_dir)
            behind = {r: len(want - seen.get(r, set())) for r, want in wants.items()}
            behind = {r: n for r, n in behind.items() if n}
            assert not behind, (f"readers still missing records: {behind}; "
                                + "; ".join(_reader_story(run_dir, r) for r in behind))


def round_trip(driver: ForeignDriver, boot: str, topic: str, run_dir: Path) -> None:
    """A client driver's producers and consumers on a real cluster, no faults: 2 producers
    at 200/s for 5 s, an assign and a subscribe consumer. Every attempt acknowledged at its
    offset, each record once in the topic, read by both consumers; every process reports
    the client's version and ends by itself, with no bad line; the subscriber's group
    assigned it every partition."""
    import uuid

    from tests.workloads.conftest import read_table
    from workloads.config import ConsumerConfig, ConsumerSpec, ProducerConfig
    from workloads.record import decode

    kind, version = driver.client.kind, driver.client.version
    # a group of its own: the package's other tests' consumers are no members of it
    ccfg = ConsumerConfig(group_id=f"kc-{kind}-{uuid.uuid4().hex[:6]}")
    consumers = driver.start_consumers(run_dir, boot, topic, 3, ccfg,
                                       [ConsumerSpec("c0", "assign"),
                                        ConsumerSpec("c1", "subscribe")])
    # a number of records, not a time: a producer's first request on a fresh topic can take
    # seconds on a loaded host (one acknowledged 1 record in a 5 s run while the other wrote
    # all its 1000); the duration is only the bound
    producers = driver.start_producers(run_dir, boot, topic, 3,
                                       ProducerConfig(rate=200, duration_s=60, max_records=1000),
                                       2)
    wait_finished(producers, timeout_s=90)
    pstats = producers.stop()
    writes = rows(read_table(run_dir, "writes"))
    acked = acked_identities(writes)
    # Nothing failed without faults. A producer that fell behind its rate (a loaded machine)
    # may find its client's input queue full when its time is up: the record it was handing
    # over then was never sent (sarama's driver says NotQueued), one a producer at most.
    unsent = [w for w in writes if w["outcome"] != "ok"]
    assert all(w["error"] == "NotQueued" for w in unsent), unsent
    assert len({w["producer"] for w in unsent}) == len(unsent), unsent
    assert len(acked) + len(unsent) == len(writes) and len(acked) > 1500, pstats
    assert {(w["producer"], w["partition"]) for w in writes} == {
        (p, q) for p in (0, 1) for q in range(3)}
    assert all(offset is not None for _, offset in acked.values())  # acks=all: offsets
    log = read_topic(boot, topic, 3)
    for (producer, seq), (part, offset) in acked.items():
        assert decode(log[(part, offset)]) == (producer, seq, True)
    assert len(log) == len(acked)  # idempotent, no faults: each record once, nothing else
    wait_read(run_dir, {"c0": set(acked), "c1": set(acked)})
    cstats = consumers.stop()
    for name, st in [*pstats.items(), *cstats.items()]:
        assert st["client"] == {"client": kind, "client_version": version}, (name, st)
        assert st["driver_ended"] is True and st["driver_exitcode"] == 0, (name, st)
        assert st["bad_lines"] == 0, (name, st)
    events = [json.loads(x) for x in
              (run_dir / "history" / "events.jsonl").read_text().splitlines()]
    assigned = [e["detail"]["partitions"] for e in events if e["kind"] == "rebalance"
                and e["detail"]["reader"] == "c1" and e["detail"]["what"] == "assigned"]
    assert any(set(p) == {f"{topic}:{q}" for q in range(3)} for p in assigned), events


def one_consumer_reads_all(driver: ForeignDriver, boot: str, topic: str, run_dir: Path,
                           ccfg: Any, mode: str, rate: float,
                           duration_s: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One consumer c0 of ``mode`` and one producer at ``rate`` for ``duration_s``, on 3
    partitions: more than 500 acknowledged, every one read by c0, and c0's driver ended by
    itself with exit code 0 and no bad line. Returns c0's stats and the run's events."""
    from tests.workloads.conftest import read_table
    from workloads.config import ConsumerSpec, ProducerConfig

    consumers = driver.start_consumers(run_dir, boot, topic, 3, ccfg, [ConsumerSpec("c0", mode)])
    producers = driver.start_producers(run_dir, boot, topic, 3,
                                       ProducerConfig(rate=rate, duration_s=duration_s), 1)
    wait_finished(producers, timeout_s=90)
    producers.stop()
    acked = acked_identities(rows(read_table(run_dir, "writes")))
    assert len(acked) > 500
    wait_read(run_dir, {"c0": set(acked)})
    st = consumers.stop()["c0"]
    assert st["driver_exitcode"] == 0 and st["driver_ended"] and st["bad_lines"] == 0, st
    events = [json.loads(x) for x in
              (run_dir / "history" / "events.jsonl").read_text().splitlines()]
    return st, events
