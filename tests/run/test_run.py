"""`kafka-chaos run` end to end on a real cluster: the run directory matches the contract, and
Ctrl-C stops a run quickly, cleans up, and leaves a history that reads back."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from chaos.config import RunConfig
from chaos.orchestrator import run

pytestmark = pytest.mark.cluster

WRITES = {"op_id": pa.int64(), "producer": pa.int32(), "seq": pa.int64(), "topic": pa.string(),
          "partition": pa.int32(), "invoke_ns": pa.int64(), "complete_ns": pa.int64(),
          "outcome": pa.string(), "offset": pa.int64(), "error": pa.string(),
          "txn": pa.string(), "txn_outcome": pa.string()}
READS = {"reader": pa.string(), "mode": pa.string(), "poll": pa.int64(), "read_ns": pa.int64(),
         "topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(),
         "producer": pa.int32(), "seq": pa.int64(), "valid": pa.bool_()}
OBS = {"ts_ns": pa.int64(), "topic": pa.string(), "partition": pa.int32(),
       "leader": pa.int32(), "isr": pa.list_(pa.int32()), "replicas": pa.list_(pa.int32()),
       "leader_epoch": pa.int32()}


def table(path: Path) -> pa.Table:
    return ds.dataset(path, format="parquet").to_table()


def events_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history" / "events.jsonl").read_text()
            .splitlines() if line.strip()]


def test_run_with_faults_writes_a_contract_run_directory(tmp_path, docker_client):
    cfg = RunConfig(scenario="contract", out=str(tmp_path), duration=40, fault_interval=8,
                    faults=["kill", "pause", "partition"], rate=150, seed=11,
                    check=False, report=False)
    out = run(cfg, None, progress=print)
    assert out.completed and out.error is None, out.error
    run_dir = out.run_dir
    assert (tmp_path / "latest").resolve() == run_dir.resolve()
    doc = json.loads((run_dir / "run.json").read_text())
    for key in ("broker_config", "topic_config", "producer_config", "consumer_config"):
        assert isinstance(doc[key], dict) and doc[key], key
    assert doc["topic_config"]["min.insync.replicas"] == "2"
    assert doc["producer_config"]["acks"] == "all"

    for name, schema in (("writes", WRITES), ("reads", READS), ("observations", OBS)):
        t = table(run_dir / "history" / f"{name}.parquet")
        assert t.num_rows > 0, name
        for col, typ in schema.items():
            assert t.schema.field(col).type == typ, (name, col, t.schema.field(col).type)

    evs = events_of(run_dir)
    phases = {(e["detail"].get("name"), e["phase"]): e["ts_ns"] for e in evs
              if e["kind"] == "phase"}
    w0, w1 = phases[("workload", "start")], phases[("workload", "end")]
    faults = [e for e in evs if e["kind"] in ("kill", "pause", "partition")]
    assert faults and all(w0 <= e["ts_ns"] for e in faults)
    assert any(e["ts_ns"] < w1 for e in faults if e["phase"] == "start")
    writes = table(run_dir / "history" / "writes.parquet").to_pandas()
    during = writes[(writes.invoke_ns > faults[0]["ts_ns"]) & (writes.invoke_ns < w1)]
    assert len(during) > 0, "no writes interleaved with the faults"

    drain_end = next(e for e in evs if e["kind"] == "phase" and e["phase"] == "end"
                     and e["detail"].get("name") == "drain")
    assert drain_end["detail"]["complete"] is True
    reads = table(run_dir / "history" / "reads.parquet").to_pandas()
    drained = reads[reads.reader == "drain"]
    for key, end in drain_end["detail"]["end_offsets"].items():
        part = int(key.split(":")[1])
        got = drained[drained.partition == part]
        # No transactions: every offset below the end holds a record the drain read.
        assert int(got.offset.max()) + 1 == end
        acked = writes[(writes.partition == part) & (writes.outcome == "ok")]
        assert int(acked.offset.max()) < end
    assert (run_dir / "logs" / "node-1.log").stat().st_size > 0
    # nothing of the run's cluster is left: tests/hygiene.py's no_leaks checks (every test)


def test_sigint_stops_the_run_within_a_minute_and_keeps_the_history(tmp_path, docker_client):
    cmd = [sys.executable, "-m", "chaos", "run", "--duration", "300", "--out", str(tmp_path),
           "--faults", "kill,pause", "--fault-interval", "5", "--rate", "100"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        latest = tmp_path / "latest"
        for attempt in Retrying(stop=stop_after_delay(180), wait=wait_fixed(1), reraise=True):
            with attempt:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                parts = list((latest / "history" / "writes.parquet").glob("part-*.parquet"))
                assert parts, "no writes flushed yet"
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        output, _ = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 60
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, output
    left = docker_client.containers.list(all=True, filters={
        "label": f"io.kafka-chaos.owner-pid={proc.pid}"})
    assert not left, f"containers left: {[c.name for c in left]}"
    run_dir = latest.resolve()
    writes = table(run_dir / "history" / "writes.parquet")
    assert writes.num_rows > 0
    assert any(e["kind"] == "interrupted" for e in events_of(run_dir))
