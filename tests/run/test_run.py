"""`kafka-chaos run` end to end on a real cluster: the run directory matches the contract, and
Ctrl-C, SIGTERM or a double Ctrl-C stop a run quickly, clean up, and leave a history that
reads back; after SIGKILL the next start's sweep removes what the run left."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import NoReturn

import docker
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cleanup import LABEL_OWNER, sweep_orphans
from contract.owners import sweep_owned_dirs
from runner.config import RunConfig
from runner.orchestrator import run
from tests.hygiene import left_behind
from tests.run.cli import start

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
    cfg = RunConfig(scenario="contract", out=str(tmp_path), duration=24, fault_interval=6,
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
    # the liveness phase follows the faults' final heal, inside the workload, before the heal
    # phase and the drain
    l0, l1 = phases[("liveness", "start")], phases[("liveness", "end")]
    assert w0 < l0 < l1 < w1 < phases[("heal", "start")]
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


def _start_run(tmp_path: Path, faults: str) -> tuple[subprocess.Popen[str], list[str]]:
    """``kafka-chaos run`` for (at most) 300 s; returns once its first writes are flushed.
    Its output is collected line by line in the returned list."""
    proc = start(["run", "--duration", "300", "--out", str(tmp_path), "--faults", faults,
                  "--fault-interval", "3", "--rate", "100"],
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    assert proc.stdout is not None
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()  # type: ignore[arg-type]
    for attempt in Retrying(stop=stop_after_delay(180), wait=wait_fixed(0.5), reraise=True):
        with attempt:
            assert proc.poll() is None, "".join(lines)
            parts = list((tmp_path / "latest" / "history" / "writes.parquet")
                         .glob("part-*.parquet"))
            assert parts, "no writes flushed yet"
    return proc, lines


def _until_exit(proc: subprocess.Popen[str], lines: list[str], timeout_s: float,
                out: Path | None = None) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _fail_with_stacks(proc, lines, f"the run did not stop within {timeout_s:.0f}s", out)


def _fail_with_stacks(proc: subprocess.Popen[str], lines: list[str], what: str,
                      out: Path | None) -> NoReturn:
    """Fails the test with every thread's stack of the run (its CLI prints them on SIGUSR1),
    its output and the end of its framework log, after killing its process group."""
    proc.send_signal(signal.SIGUSR1)
    with contextlib.suppress(AssertionError):
        for attempt in Retrying(stop=stop_after_delay(5), wait=wait_fixed(0.2),
                                reraise=True):
            with attempt:
                assert any("most recent call first" in line for line in lines)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # the framework log says which step took the time
    log = out / "latest" / "logs" / "framework.log" if out else None
    tail = log.read_text()[-6000:] if log and log.exists() else ""
    pytest.fail(f"{what}:\n" + "".join(lines) + "\nframework.log (end):\n" + tail)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _group_ended(pgid: int, timeout_s: float) -> bool:
    """Whether every process of the run's group (workload processes, multiprocessing's
    resource tracker) ends within ``timeout_s``; what is left is killed."""
    try:
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                                reraise=True):
            with attempt:
                assert not _group_alive(pgid)
    except AssertionError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        return False
    return True


def _left(docker_client: docker.DockerClient, proc: subprocess.Popen[str]) -> list[str]:
    return left_behind(docker_client, {LABEL_OWNER: str(proc.pid)}, set())


@pytest.mark.parametrize("how", ["sigint", "sigterm", "sigint-twice"])
def test_a_stopped_run_cleans_up_and_keeps_the_history(how, tmp_path, docker_client):
    """Ctrl-C, SIGTERM, and an impatient second Ctrl-C while it heals and tears down (which
    it acknowledges and does not obey: tests/compose/test_stop_signals.py): the run stops
    within a minute, leaves no container, network or volume (nor iptables rule, qdisc,
    delayer: no_leaks), and the history written so far reads back."""
    proc, lines = _start_run(tmp_path, "kill,pause")
    try:
        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        if how == "sigint-twice":
            try:
                for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.1),
                                        reraise=True):
                    with attempt:  # the first one is being handled: teardown begins
                        assert any(e["kind"] == "interrupted"
                                   for e in events_of((tmp_path / "latest").resolve()))
            except AssertionError:  # where was it? (seen once in a suite, 2026-11-28)
                _fail_with_stacks(proc, lines, "no 'interrupted' event within 30 s of "
                                  "the first Ctrl-C", tmp_path)
            proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        code = _until_exit(proc, lines, 60, tmp_path)
        assert time.monotonic() - t0 < 60
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.returncode == -signal.SIGKILL:  # the test killed it: remove what it left
            sweep_orphans(docker_client)
    output = "".join(lines)
    assert code == 2, output  # the second Ctrl-C is acknowledged, not obeyed mid-teardown
    assert not _left(docker_client, proc), output
    assert _group_ended(proc.pid, 10), "workload processes outlived the run"
    run_dir = (tmp_path / "latest").resolve()
    assert table(run_dir / "history" / "writes.parquet").num_rows > 0
    assert any(e["kind"] == "interrupted" for e in events_of(run_dir))


def test_a_killed_run_is_swept_by_the_next_start(tmp_path, docker_client):
    """SIGKILL mid-workload cannot clean up: the cluster stays until the next start sweeps
    clusters whose owner process is gone (what KafkaCluster.start does first)."""
    proc, lines = _start_run(tmp_path, "partition,pause")
    try:
        proc.send_signal(signal.SIGKILL)
        _until_exit(proc, lines, 30)
        # at once: any other kafka-chaos process on this machine starting a cluster or a
        # checker sweeps orphans too (suite 74 lost the scratch to one within seconds)
        left = _left(docker_client, proc)
        # its checker's scratch too (the JVM started while the cluster did), named by its pid
        scratch = _scratch(proc.pid)
        # its workload processes notice that their parent is gone and end too
        ended = _group_ended(proc.pid, 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert ended, "workload processes outlived the SIGKILLed run by 30 s"
    assert left, "a SIGKILLed run left nothing: this test tests nothing"
    assert any("-spark-" in name for name in scratch), scratch
    sweep_orphans(docker_client)
    # Gone at once in a lone run. In a suite, another lane's cluster start may be sweeping
    # the same orphan, and this sweep leaves what that one is still removing to it.
    for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.5), reraise=True):
        with attempt:
            assert not _left(docker_client, proc)
    for kind in ("spark", "warm-up"):  # what the next checker session or warm-up does first
        sweep_owned_dirs(kind)
    assert not _scratch(proc.pid)


def _scratch(pid: int) -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"kafka-chaos-*-{pid}-*"))
