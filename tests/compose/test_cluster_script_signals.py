"""A script's own ``with KafkaCluster(...)``: SIGTERM removes the cluster (Python's default
for it ends the process on the spot), and a second signal during the removal is only
acknowledged (compose.cluster.KafkaCluster.__enter__)."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import docker
import pytest
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from compose import cleanup

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]

# A background job starts with SIGINT ignored (and the guard leaves an ignored signal
# alone): the script puts back what a terminal would give it.
_SCRIPT = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from compose.cluster import KafkaCluster
from compose.config import ClusterConfig
with KafkaCluster(ClusterConfig(name=sys.argv[1], brokers=3)) as cluster:
    print("up", flush=True)
    time.sleep(300)
"""


def _containers(client: docker.DockerClient, name: str) -> list[str]:
    # Polled while the script removes them: docker-py lists ids, then inspects each, and one
    # removed in between is a 404 unless skipped (suite 116).
    return [c.name for c in client.containers.list(
        all=True, filters={"label": f"{cleanup.LABEL_CLUSTER}={name}"}, ignore_removed=True)]


def test_sigterm_removes_a_scripts_cluster_and_a_second_signal_cannot_cut_that_short(
        tmp_path: Path) -> None:
    client = docker.from_env()
    name = f"kc-script-{uuid.uuid4().hex[:6]}"
    script = tmp_path / "my_script.py"
    script.write_text(_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), name], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "up", "the cluster never came up"
        assert len(_containers(client, name)) == 3
        proc.send_signal(signal.SIGTERM)

        # The removal goes node by node: once the first is gone the script is inside it.
        @retry(stop=stop_after_delay(60), wait=wait_fixed(0.05),
               retry=retry_if_result(lambda n: n >= 3))
        def removal_started() -> int:
            return len(_containers(client, name))

        assert removal_started() > 0, "the removal ended before a second signal could land"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "stopping already (SIGINT)" in err, err
    assert proc.returncode == 128 + signal.SIGTERM, err  # SystemExit, not KeyboardInterrupt
    assert not _containers(client, name)
    assert not client.networks.list(filters={"label": f"{cleanup.LABEL_CLUSTER}={name}"})
