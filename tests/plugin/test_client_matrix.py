"""The client matrix (chaos/client_matrix.py) with a fake runner: which cells run, which a
client cannot run and why, the table and the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos import client_matrix, nightly
from chaos.plugin_result import ChaosResult
from scenarios import SCENARIOS
from tests.plugin.fakes import write_run


def fake(cell: nightly.Cell, out: Path, common: dict[str, Any]) -> ChaosResult:
    client = str(cell.axes["client"])
    run_dir = out / str(cell.scenario) / client.replace(":", "_")
    if client.startswith("sarama"):  # that side lost records the scenario must not lose
        write_run(run_dir, counts={"lost": 3}, valid=False,
                  expectations={"met": False, "details": [
                      {"what": "lost ==0", "actual": 3, "met": False}]})
    else:
        write_run(run_dir, expectations={"met": True, "details": []})
    return ChaosResult.from_run_dir(run_dir, label=cell.name)


def test_cells_and_what_a_client_cannot_run() -> None:
    todo, skipped = client_matrix.client_cells(["confluent-kafka", "sarama:1.61.1"], [])
    assert len(todo) == 2 * len(SCENARIOS) - 13
    assert sorted(skipped) == [(s, "sarama:1.61.1") for s in (
        "close-past-marker", "coordinator-moved-on-assign", "eof-consumer-restart",
        "idle-producer-all-brokers-down", "lost-txn-marker", "lost-txn-marker-continued",
        "max-poll-stall",
        "offsets-coordinator-fenced", "offsets-coordinator-killed", "stale-committed-offset",
        "stale-txn-requests", "stalled-reader-leader-move",
        "transactions-chaos")]
    assert "KIP-848" in skipped[("max-poll-stall", "sarama:1.61.1")]
    assert "restart" in skipped[("eof-consumer-restart", "sarama:1.61.1")]
    assert "transactions" in skipped[("transactions-chaos", "sarama:1.61.1")]
    # the Java client runs every scenario (restart-mode consumers too) but those whose
    # script stalls the poll loop, which its driver cannot (refused, not run to "unknown")
    todo, skipped = client_matrix.client_cells(["java:4.1.1"], [])
    stalls = ("coordinator-moved-on-assign", "max-poll-stall", "stalled-reader-leader-move")
    # ... and those whose producers send offsets (run option send_offsets: confluent-kafka)
    offsets = ("offsets-coordinator-fenced", "offsets-coordinator-killed")
    # ... and the one whose idle producer's reports of every broker down are needed
    idle = ("idle-producer-all-brokers-down",)
    assert len(todo) == len(SCENARIOS) - len(stalls) - len(offsets) - len(idle)
    assert skipped == {**{(s, "java:4.1.1"): "the poll-stall fault is driven with "
                          "confluent-kafka only, so far" for s in stalls},
                       **{(s, "java:4.1.1"): "--send-offsets runs with confluent-kafka on a "
                          "cluster kafka-chaos starts only" for s in offsets},
                       **{(s, "java:4.1.1"): "--idle-producer runs with confluent-kafka only "
                          "(its reports of every broker down are recorded)" for s in idle}}


def test_table_and_exit_code(tmp_path: Path) -> None:
    figures = tmp_path / "client-matrix.md"
    code = client_matrix.main(["--clients", "confluent-kafka,sarama:1.61.1", "--only", "eof",
                               "--only", "acks1", "--out", str(tmp_path / "runs"),
                               "--figures", str(figures)], runner=fake)
    assert code == 1  # a cell failed its expectations
    text = figures.read_text()
    assert "| acks1-leader-failover | confluent-kafka | valid | yes | none |" in text
    assert "| acks1-leader-failover | sarama:1.61.1 | INVALID | no: expected lost ==0, got 3 " \
           "| lost 3 |" in text
    assert "| eof-consumer-restart | sarama:1.61.1 | not run | not driven: consumer mode " \
           "restart" in text
    assert "Written by `python -m chaos.client_matrix --clients confluent-kafka,sarama:1.61.1 " \
           "--only eof --only acks1`" in text
