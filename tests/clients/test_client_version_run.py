"""A real run with ``client_version``: the producers and consumers load that confluent-kafka
release (not the installed one), write a history with it, and run.json/the report say so."""

from __future__ import annotations

import json

import confluent_kafka
import pyarrow.dataset as ds
import pytest

from runner.config import RunConfig
from runner.orchestrator import run
from workloads.client_info import version_string

pytestmark = pytest.mark.cluster

#: A second release with manylinux wheels for CPython 3.11, older than the one installed.
OTHER = "2.12.0"


def test_a_run_with_another_client_version_records_what_its_processes_loaded(
        tmp_path, docker_client):
    installed_ck = version_string(confluent_kafka.version())
    installed_rd = version_string(confluent_kafka.libversion())
    assert (installed_ck, installed_rd) != (OTHER, OTHER), "pick a release not installed"
    cfg = RunConfig(scenario="client-version", out=str(tmp_path), duration=15, faults=[],
                    rate=50, producers=2, consumers=1, client_version=OTHER, check=False,
                    report=True, collect_data=False)
    out = run(cfg, None, progress=print)
    assert out.completed and out.error is None, out.error
    doc = json.loads((out.run_dir / "run.json").read_text())
    v = doc["versions"]
    # What the children reported (both producers at the workload's end, the consumer at
    # teardown), not the orchestrator's own client.
    assert v["client_reported_by"] == ["c0", "p0", "p1"]
    assert v["confluent_kafka"] == OTHER and v["librdkafka"] == OTHER != installed_rd
    assert v["orchestrator_confluent_kafka"] == installed_ck
    assert v["orchestrator_librdkafka"] == installed_rd
    assert v["client_venv"].endswith(f"kafka-chaos/clients/confluent-kafka-{OTHER}")
    assert doc["options"]["client_version"] == OTHER
    # The producers did work with that client: acknowledged writes in the history.
    writes = ds.dataset(out.run_dir / "history" / "writes.parquet", format="parquet").to_table()
    assert writes.filter(ds.field("outcome") == "ok").num_rows > 100
    reads = ds.dataset(out.run_dir / "history" / "reads.parquet", format="parquet").to_table()
    assert reads.num_rows > 100
    # The report shows the workload's client and the observer's/drain's different one.
    html = out.report.read_text() if out.report else ""
    assert f"confluent-kafka {installed_ck}, librdkafka {installed_rd}" in html
    assert html.count(OTHER) >= 2
