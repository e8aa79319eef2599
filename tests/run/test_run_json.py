"""run.json has one writer (runner.rundir.save_run_json): a run's orchestrator and a test
body's session (chaos.user_api.ChaosSession) both write through it, and the file's bytes are
what both wrote before (``json.dumps(doc, indent=2, default=str)``, renamed into place)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import runner.rundir
from chaos.user_api import ChaosSession
from compose.config import ClusterConfig
from runner.config import RunConfig
from runner.rundir import new_run_dir, save_run_json, write_run_json


def _expected_bytes(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, default=str)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run directories save_run_json wrote, whoever called it."""
    seen: list[Path] = []

    def spy(run_dir: Path, doc: dict[str, Any]) -> None:
        seen.append(run_dir)
        save_run_json(run_dir, doc)

    monkeypatch.setattr(runner.rundir, "save_run_json", spy)
    monkeypatch.setattr("chaos.user_api.save_run_json", spy)
    return seen


def test_save_run_json_writes_the_document_atomically(tmp_path: Path) -> None:
    doc = {"scenario": "s", "path": tmp_path, "n": 1}  # default=str: a Path becomes its text
    save_run_json(tmp_path, doc)
    assert (tmp_path / "run.json").read_text() == _expected_bytes(doc)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left


def test_a_runs_run_json_goes_through_the_one_writer(tmp_path: Path,
                                                      writes: list[Path]) -> None:
    run_dir = new_run_dir(tmp_path, "one-writer")
    doc = write_run_json(run_dir, RunConfig(scenario="one-writer"), image="img:4.1.1",
                         kafka_version="4.1.1", broker_config={}, producer_config={"acks": "all"},
                         consumer_config={}, workload={"topic": "chaos"}, expect=None,
                         mechanism=None)
    assert writes == [run_dir]
    assert (run_dir / "run.json").read_text() == _expected_bytes(doc)


@dataclass
class _Partition:
    replicas: list[int]


@dataclass
class _Entry:
    value: str | None
    is_default: bool


class _Future:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: float | None = None) -> Any:
        return self.value


class _Admin:
    def describe_configs(self, resources: list[Any]) -> dict[Any, _Future]:
        entries = {"min.insync.replicas": _Entry("2", False), "segment.ms": _Entry("1", True)}
        return {r: _Future(entries) for r in resources}


@dataclass
class _Cluster:
    """What ChaosSession.write_run_json reads of a cluster, without Docker."""

    cfg: ClusterConfig = field(default_factory=ClusterConfig)
    image: str = "kafka-chaos/kafka:4.1.1-test"
    brokers: dict[int, object] = field(default_factory=lambda: {1: None, 2: None, 3: None})

    def describe(self, topic: str) -> list[_Partition]:
        return [_Partition([1, 2, 3]), _Partition([2, 3, 1])]

    def admin(self) -> _Admin:
        return _Admin()


def test_a_sessions_run_json_goes_through_the_one_writer(tmp_path: Path,
                                                          writes: list[Path]) -> None:
    session = ChaosSession(_Cluster(), tmp_path / "run", name="orders")  # type: ignore[arg-type]
    try:
        doc = session.write_run_json("orders", 2, "read_committed")
    finally:
        session.close()
    assert writes == [tmp_path / "run"]
    assert (tmp_path / "run" / "run.json").read_text() == _expected_bytes(doc)
    assert doc["topic_config"] == {"replication.factor": "3", "min.insync.replicas": "2"}
    assert doc["workload"]["source"] == "user" and doc["faults"]["schedule"] == "user"
