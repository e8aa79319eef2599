"""The checker on a real Spark cluster: a standalone master and two workers, each its own JVM
(issue 14). The same run checked there and on local[2] gives the same results.json, apart
from where and how long it ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contract.exit_codes import exit_code_of_results as exit_code
from tests.support.spark_standalone import alive_workers, standalone_cluster
from tests.support.synthetic import SyntheticSpec, write_synthetic_run

# Five JVMs on two cores take 1-3 min: a nightly test (make nightly), not in make test.
pytestmark = [pytest.mark.spark, pytest.mark.nightly]

#: Where and how long the check ran: the only keys allowed to differ.
_WHERE = ("master", "seconds", "phases")


def _comparable(results: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(results))
    for key in _WHERE:
        out["checker"].pop(key, None)
    return out


def test_standalone_cluster_gives_the_local_results(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from checkers import check_run

    spec = SyntheticSpec(writes=4000, lost=7, duplicate=3, inconsistent=2, unseen=0,
                         checked=False)
    local_dir = write_synthetic_run(spec, tmp_path / "local")
    remote_dir = tmp_path / "remote"
    shutil.copytree(local_dir, remote_dir)

    local = check_run(str(local_dir))
    assert "error" not in local, local.get("traceback")
    assert local["checker"]["master"].startswith("local")
    counts = {k: a["count"] for k, a in local["anomalies"].items() if a["count"]}
    assert counts["lost"] == 7 and counts["duplicate"] == 3, counts  # the check really ran

    with standalone_cluster(tmp_path / "spark") as cluster:
        assert alive_workers(cluster.ui_url) == 2
        # few shuffle partitions, as on local[2]: Spark's 200 would be 200 tiny tasks
        env = {**cluster.env, "KAFKA_CHAOS_SPARK_EXTRA_CONF": "spark.sql.shuffle.partitions=4"}
        proc = subprocess.run(
            [sys.executable, "-m", "chaos", "check", str(remote_dir),
             "--spark-master", cluster.master_url],
            env=env, capture_output=True, text=True, timeout=600)
    remote = json.loads((remote_dir / "results.json").read_text())
    assert "error" not in remote, remote.get("traceback") or proc.stderr[-3000:]
    assert proc.returncode == exit_code(local), proc.stderr[-3000:]
    assert remote["checker"]["master"] == cluster.master_url
    print("local", local["checker"]["seconds"], "s; standalone", remote["checker"]["seconds"],
          "s", remote["checker"]["phases"])
    assert _comparable(remote) == _comparable(local)
