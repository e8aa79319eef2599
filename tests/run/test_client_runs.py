"""Whole runs with the clients in other languages (issue 48) on a real cluster: the checks
the confluent-kafka workload passes.

- A scripted kill, pause and partition run (a TOML scenario with ``client = "…"``): valid,
  every acknowledged write read back by the drain and by both group consumers, and run.json
  says which client wrote the records. The Java client's run is the suite's; the Go
  clients' are nightly.
- Nightly: acks1-leader-failover with each client: the tail the dead leader acknowledged
  alone is lost, and the loss is counted (allowed under acks=1).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runner.orchestrator import run
from scenarios import SCENARIOS
from scenarios.toml_file import load_scenarios
from tests.support.clients import FRANZ_GO, JAVA, SARAMA

pytestmark = pytest.mark.cluster

GO = [FRANZ_GO, SARAMA]
CLIENTS = [JAVA, *(pytest.param(c, marks=pytest.mark.nightly) for c in GO)]

SCRIPTED = """
[[scenario]]
name = "kill-pause-partition"
summary = "a client through a leader kill, a follower pause and a leader cut"
settle = 4
[scenario.config]
client = "CLIENT"
duration = 60
rate = 150
consumers = 2
consumer_mode = "subscribe"
[scenario.config.broker_config]
"replica.lag.time.max.ms" = "4000"
[scenario.expect]
valid = true
anomalies = { lost = "==0", unseen = "==0", duplicate = "==0" }
[[scenario.mechanism]]
kind = "fault"
fault = "kill"
[[scenario.mechanism]]
kind = "fault"
fault = "pause"
[[scenario.mechanism]]
kind = "fault"
fault = "partition"
[[scenario.steps]]
action = "wait"
seconds = 3
[[scenario.steps]]
action = "start"
fault = "kill"
target = "leader:0"
as = "kill"
[[scenario.steps]]
action = "wait"
seconds = 4
[[scenario.steps]]
action = "stop"
ref = "kill"
[[scenario.steps]]
action = "start"
fault = "pause"
target = "follower:1"
as = "pause"
[[scenario.steps]]
action = "wait"
seconds = 4
[[scenario.steps]]
action = "stop"
ref = "pause"
[[scenario.steps]]
action = "start"
fault = "partition"
shape = "leader-followers"
target = "leader:2"
as = "cut"
[[scenario.steps]]
action = "wait"
seconds = 4
[[scenario.steps]]
action = "stop"
ref = "cut"
"""


def _run(scenario: Any, tmp_path: Path, **overrides: Any) -> tuple[dict[str, Any], Path]:
    out = run(scenario.run_config(out=str(tmp_path), report=False, **overrides), scenario,
              progress=print)
    assert out.completed and out.error is None and out.results is not None, out.error
    print(json.dumps(out.results, indent=1)[:3000])
    return dict(out.results), out.run_dir


@pytest.mark.parametrize("client", CLIENTS)
def test_a_scripted_run_is_valid_with_every_ack_read_back(client, tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "scenario.toml"
    path.write_text(textwrap.dedent(SCRIPTED).replace("CLIENT", client))
    sc = load_scenarios(path)["kill-pause-partition"]
    res, run_dir = _run(sc, tmp_path)
    assert res["mechanism"]["observed"], res["mechanism"]
    assert res["expectations"]["met"] and res["valid"] is True, res["expectations"]
    writes = res["stats"]["writes"]
    assert writes["ok"] > 3000, writes
    for kind in ("lost", "unseen", "duplicate", "poll-skip"):
        entry = res["anomalies"][kind]
        assert entry.get("checked") is not False and entry["count"] == 0, (kind, entry)
    versions = json.loads((run_dir / "run.json").read_text())["versions"]
    assert f"{versions['client']}:{versions['client_version']}" == client, versions
    assert versions["librdkafka"] is None and sorted(versions["client_reported_by"]) == [
        "c0", "c1", "p0", "p1"]
    # the group consumers read what was acknowledged: both members read some
    import pyarrow.dataset as ds

    reads = ds.dataset(run_dir / "history" / "reads.parquet").to_table().to_pylist()
    by_reader = {r["reader"] for r in reads if r["reader"] != "drain" and r["valid"]}
    assert by_reader == {"c0", "c1"}, by_reader
    assert (run_dir / "logs" / "workload-p0.log").stat().st_size > 0  # the client's own log


@pytest.mark.nightly  # more whole runs; the Java scripted run above is the suite's
@pytest.mark.parametrize("client", [JAVA, *GO])
def test_acks1_leader_failover_loses_the_tail(client, tmp_path):  # type: ignore[no-untyped-def]
    res, _ = _run(SCENARIOS["acks1-leader-failover"], tmp_path, client=client)
    assert res["mechanism"]["observed"], res["mechanism"]
    lost = res["anomalies"]["lost"]
    assert lost["count"] > 0 and lost["allowed"] is True, lost
    assert res["expectations"]["met"], res["expectations"]
