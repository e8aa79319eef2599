"""librdkafka#4261's catalogue entry without a cluster: it pins confluent-kafka 2.1.0 and
2.1.1 to stalled-reader-leader-move, whose expectation follows the client version, and the
workload processes import on a release that old."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from contract.known_bugs import BY_ID, EPOCH_VALIDATION_REREAD
from runner.clients import ensure_client, venv_dir
from scenarios import SCENARIOS
from scenarios.bugs import BUG_BY_ID, find

ROOT = Path(__file__).resolve().parents[2]


def test_the_entry_pins_2_1_0_and_2_1_1() -> None:
    entry = find(EPOCH_VALIDATION_REREAD)
    bug = BY_ID[EPOCH_VALIDATION_REREAD]
    assert (entry.axis, entry.affected, entry.fixed) == ("client_version", "2.1.0", "2.1.1")
    assert entry.kind == "nonmonotonic-poll" and entry.kind in bug.kinds
    assert bug.affects("2.1.0") and not bug.affects("2.1.1") and not bug.affects("2.0.2")
    assert bug.facts == {"epoch_rise_before_reread"}
    assert entry.scenario is SCENARIOS["stalled-reader-leader-move"]
    cfg = entry.scenario.run_config(**entry.pin("affected"))
    cfg.validate()
    # an old client on the Kafka release it was tested with; a group consumer, which the
    # poll-stall fault needs; the leader moves by a clean stop
    assert (cfg.client_version, cfg.kafka_version) == ("2.1.0", "3.9.1")
    assert cfg.consumer_mode == "subscribe" and cfg.faults == []
    assert set(entry.scenario.script_faults) == {"poll-stall", "stop"}


def test_the_expectation_follows_the_client_version() -> None:
    sc = SCENARIOS["stalled-reader-leader-move"]
    affected = sc.expect_for(sc.run_config(client_version="2.1.0"), "3.9.1")
    assert affected == {"valid": False, "anomalies": {"nonmonotonic-poll": ">0"}}
    fixed = sc.expect_for(sc.run_config(client_version="2.1.1"), "3.9.1")
    assert fixed["valid"] is True and fixed["anomalies"]["nonmonotonic-poll"] == "==0"


def test_the_workload_imports_on_confluent_kafka_2_1_0() -> None:
    """The drain and the observer's names that came in confluent-kafka 2.3 (IsolationLevel,
    OffsetSpec) are imported where used: the workload processes import the package too."""
    ensure_client("2.1.0", say=lambda _: None)  # the entry's runs build it too (a fresh clone)
    python = venv_dir("2.1.0") / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(python), "-c", "import workloads.consumer, workloads.producer"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert BUG_BY_ID[EPOCH_VALIDATION_REREAD].runnable
