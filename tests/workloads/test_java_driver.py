"""The workload seam (issue 48): the driver protocol, the Python recorder, and the Java
client's driver.

- The Java driver encodes record values byte for byte as the contract's codec does (the
  codec's shared test vectors).
- The recorder turns a driver's lines into the history a librdkafka workload writes: a
  real process speaking the protocol (tests/support/fake_driver.py) acknowledges, fails,
  is refused, and dies with an attempt outstanding; a consumer's reads decode; a torn last
  line is skipped.
- On the package's real cluster, Java producers and consumers (assign, subscribe) write and
  read a topic (helpers.round_trip); transactional Java producers commit and abort.
"""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from contract.clients import JAVA, ClientSpec
from contract.driver_protocol import FRAME_SIZE, FRAMES
from runner.java_client import JavaClient, ensure_java
from tests.support.clients import JAVA as TEST_JAVA
from tests.support.clients import version
from tests.workloads.conftest import read_table
from tests.workloads.helpers import WRITES_CONTRACT, read_topic, round_trip, rows, wait_finished
from workloads.config import ConsumerConfig, ConsumerSpec, ProducerConfig
from workloads.drivers import ForeignDriver
from workloads.record import decode, encode

JAVA_VERSION = version(TEST_JAVA)
FAKE = [sys.executable, str(Path(__file__).resolve().parents[1] / "support" / "fake_driver.py")]


@pytest.fixture(scope="module")
def java() -> JavaClient:
    """The Java driver, built from Maven Central on first use (cached afterwards)."""
    return ensure_java(JAVA_VERSION, say=print)


@pytest.mark.parametrize("producer,seq,size", [
    (0, 0, 100), (7, 123456789012, 100), (63, 5, 1), (3, 42, 30), (3, 42, 31), (1, 2, 1000)])
def test_java_encodes_as_the_contract(java, producer, seq, size):  # type: ignore[no-untyped-def]
    out = subprocess.run([*java.command(), "--encode", str(producer), str(seq), str(size)],
                         capture_output=True, check=True)
    value = out.stdout.rstrip(b"\n")
    assert value == encode(producer, seq, size)
    assert decode(value) == (producer, seq, True)


def _fake(lines: list[str] | bytes, exit_code: int | None = None, tmp: Path | None = None
          ) -> tuple[ForeignDriver, dict[str, str]]:
    assert tmp is not None
    path = tmp / "lines.txt"
    path.write_bytes(lines if isinstance(lines, bytes) else "".join(lines).encode())
    extra = {"fake.lines": str(path)}
    if exit_code is not None:
        extra["fake.exit"] = str(exit_code)
    return ForeignDriver(ClientSpec(JAVA, "fake"), tuple(FAKE)), extra


def test_recorder_writes_what_a_dying_driver_reported(tmp_path):  # type: ignore[no-untyped-def]
    lines = ["hello\tjava\t9.9.9\n",
             *(f"sent\t{s}\t{s % 2}\t{1000 + s}\n" for s in range(5)),
             "ack\t0\t17\t2000\n",
             "error\t1\t2001\tTimeoutException\n",          # may be in flight: info
             "error\t2\t2002\tRecordTooLargeException\n",   # never appended: fail
             "refused\t3\t2003\tTimeoutException\n",        # refused in send(): fail
             "ack\t4\t-1\t2004"]                            # torn: no newline, then death
    driver, extra = _fake(lines, exit_code=1, tmp=tmp_path)
    cfg = ProducerConfig(duration_s=30, extra=extra)
    group = driver.start_producers(tmp_path, "unused:9092", "t", 2, cfg, 1, first_id=3)
    wait_finished(group)
    stats = group.stop()
    table = read_table(tmp_path, "writes")
    assert [(f.name, f.type) for f in table.schema] == WRITES_CONTRACT
    got = {r["seq"]: r for r in rows(table)}
    assert set(got) == {0, 1, 2, 3, 4}
    assert all(r["producer"] == 3 and r["topic"] == "t" for r in got.values())
    assert (got[0]["outcome"], got[0]["offset"], got[0]["complete_ns"]) == ("ok", 17, 2000)
    assert (got[1]["outcome"], got[1]["error"]) == ("info", "TimeoutException")
    assert (got[2]["outcome"], got[2]["error"]) == ("fail", "RecordTooLargeException")
    assert (got[3]["outcome"], got[3]["error"]) == ("fail", "TimeoutException")
    # the torn line is lost; the driver died: its record's outcome is unknown
    assert got[4]["outcome"] == "info" and got[4]["complete_ns"] is None
    assert [got[s]["partition"] for s in range(5)] == [0, 1, 0, 1, 0]
    assert got[0]["op_id"] == (3 << 40) | 0
    st = stats["p3"]
    assert (st["ok"], st["fail"], st["info"], st["attempts"]) == (1, 2, 2, 5)
    assert st["client"] == {"client": "java", "client_version": "9.9.9"}
    assert st["driver_exitcode"] == 1 and st["driver_ended"] is False
    assert st["bad_lines"] == 1


def _frame(kind: str, a: int, b: int, c: int) -> bytes:
    tag = next(t for t, k in FRAMES.items() if k == kind)
    frame = struct.pack("<Bqqq", tag, a, b, c)
    assert len(frame) == FRAME_SIZE
    return frame


def test_recorder_reads_frames_and_skips_a_torn_one(tmp_path):  # type: ignore[no-untyped-def]
    """The drivers' binary sent/ack frames between text lines; a killed driver's last frame
    cut short is torn: its record stays without an outcome (info)."""
    n = 3000  # more than one read of the pipe, so frames are cut between chunks
    stream = b"".join([
        b"hello\tjava\t9.9.9\n",
        *(_frame("sent", s, s % 2, 1000 + s) for s in range(n)),
        *(_frame("ack", s, 10 + s, 5000 + s) for s in range(0, n - 2)),
        b"error\t%d\t9000\tTimeoutException\n" % (n - 2),
        _frame("ack", n - 1, -1, 9001)[:-5]])  # torn: the driver died writing it
    driver, extra = _fake(stream, exit_code=1, tmp=tmp_path)
    group = driver.start_producers(tmp_path, "unused:9092", "t", 2,
                                   ProducerConfig(duration_s=30, extra=extra), 1)
    wait_finished(group)
    stats = group.stop()
    got = {r["seq"]: r for r in rows(read_table(tmp_path, "writes"))}
    assert set(got) == set(range(n))
    assert all((r["outcome"], r["offset"], r["complete_ns"], r["invoke_ns"], r["partition"])
               == ("ok", 10 + s, 5000 + s, 1000 + s, s % 2)
               for s, r in got.items() if s < n - 2)
    assert (got[n - 2]["outcome"], got[n - 2]["error"]) == ("info", "TimeoutException")
    assert (got[n - 1]["outcome"], got[n - 1]["complete_ns"]) == ("info", None)
    st = stats["p0"]
    assert (st["ok"], st["info"], st["attempts"], st["bad_lines"]) == (n - 2, 2, n, 1)


def test_recorder_decodes_a_driver_consumer_and_stops_it(tmp_path):  # type: ignore[no-untyped-def]
    v = base64.b64encode(encode(2, 9)).decode()
    bad = base64.b64encode(encode(2, 10)[:-1] + b"!").decode()  # padding changed
    lines = ["hello\tjava\t9.9.9\n",
             "call\tconsume\t200\n", "done\n",
             "rebalance\tassigned\t1\tt:0,t:1\n",
             f"read\t1\t5000\t0\t3\t{v}\n", f"read\t2\t5001\t1\t4\t{bad}\n",
             "read\t2\t5002\t1\t5\t\n"]  # a null value
    driver, extra = _fake(lines, tmp=tmp_path)
    cfg = ConsumerConfig(extra=extra)
    group = driver.start_consumers(tmp_path, "unused:9092", "t", 2, cfg,
                                   [ConsumerSpec("c0", "subscribe")])
    # The driver waits for its stdin to end: only the group's stop ends it, and the
    # recorder reads every line the driver wrote before it ended.
    stats = group.stop(timeout_s=30)
    got = sorted(rows(read_table(tmp_path, "reads")), key=lambda r: r["offset"])
    assert [(r["reader"], r["mode"], r["poll"], r["read_ns"], r["partition"], r["offset"])
            for r in got] == [("c0", "subscribe", 1, 5000, 0, 3),
                              ("c0", "subscribe", 2, 5001, 1, 4),
                              ("c0", "subscribe", 2, 5002, 1, 5)]
    assert [(r["producer"], r["seq"], r["valid"]) for r in got] == [
        (2, 9, True), (2, 10, False), (None, None, False)]
    events = [json.loads(x) for x in
              (tmp_path / "history" / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["detail"]["what"], e["detail"]["partitions"]) for e in events] == [
        ("rebalance", "assigned", ["t:0", "t:1"])]
    st = stats["c0"]
    assert st["driver_ended"] is True and st["driver_exitcode"] == 0, st
    assert (st["records"], st["invalid"], st["polls"]) == (3, 2, 2)


@pytest.mark.cluster
def test_java_clients_write_and_read_a_real_cluster(java, cluster, topic, tmp_path):  # type: ignore[no-untyped-def]
    driver = ForeignDriver(ClientSpec(JAVA, java.version), tuple(java.command()))
    round_trip(driver, cluster.bootstrap_servers, topic, tmp_path)


@pytest.mark.cluster
def test_java_transactions_commit_and_abort_on_a_real_cluster(java, cluster, topic, tmp_path):  # type: ignore[no-untyped-def]
    """Transactional Java producers (TV2 where the 4.x broker offers it): every row names
    its transaction and outcome; read_committed sees exactly the committed rows' records."""
    driver = ForeignDriver(ClientSpec(JAVA, java.version), tuple(java.command()))
    boot = cluster.bootstrap_servers
    # a number of records, not a time: the first transactional producer on a fresh cluster
    # waits for the transaction log's partitions (one spent all of a 6 s run in
    # init_transactions on a loaded host)
    cfg = ProducerConfig(rate=300, duration_s=60, max_records=1500, transactional=True,
                         records_per_txn=10, abort_share=0.3, seed=3,
                         transactional_id_prefix=f"kc-{topic}")
    producers = driver.start_producers(tmp_path, boot, topic, 3, cfg, 2)
    wait_finished(producers, timeout_s=120)
    stats = producers.stop()
    writes = rows(read_table(tmp_path, "writes"))
    outcomes = {w["txn_outcome"] for w in writes}
    assert outcomes == {"committed", "aborted"}, (outcomes, stats)
    assert all(w["txn"] and w["txn"].startswith(f"kc-{topic}-{w['producer']}:") for w in writes)
    by_txn: dict[str, set[str]] = {}
    for w in writes:
        by_txn.setdefault(w["txn"], set()).add(w["txn_outcome"])
    assert all(len(o) == 1 for o in by_txn.values())  # one outcome a transaction
    assert sum(1 for o in by_txn.values() if o == {"aborted"}) >= 2, by_txn
    committed = {(w["producer"], w["seq"]) for w in writes if w["txn_outcome"] == "committed"}
    visible = {decode(v)[:2] for v in read_topic(boot, topic, 3, "read_committed").values()}
    assert visible == committed
    assert stats["p0"]["txn_committed"] > 0 and stats["p0"]["txn_aborted"] > 0, stats


@pytest.mark.cluster
def test_java_restart_consumer_resumes_where_it_committed(java, cluster, topic, tmp_path):  # type: ignore[no-untyped-def]
    """A restart-mode Java consumer (alone in its group) closes once caught up and a new one
    joins: each restart a ``restart`` rebalance event, and across them every acknowledged
    record read (a resumption past the committed offset would skip some)."""
    import uuid

    from tests.workloads.helpers import one_consumer_reads_all

    driver = ForeignDriver(ClientSpec(JAVA, java.version), tuple(java.command()))
    ccfg = ConsumerConfig(group_id=f"kc-java-{uuid.uuid4().hex[:6]}", restart_interval_s=1.0,
                          restart_pause_s=0.5)
    _, events = one_consumer_reads_all(driver, cluster.bootstrap_servers, topic, tmp_path, ccfg,
                                       "restart", rate=100, duration_s=8)
    restarts = [e for e in events if e["kind"] == "rebalance" and e["detail"]["what"] == "restart"]
    assert len(restarts) >= 2, events
