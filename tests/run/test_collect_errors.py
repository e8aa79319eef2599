"""A copy of the replicas' data that fails is recorded, never silent (issue 11): the
orchestrator turns each of ``KafkaCluster.collect``'s failures into a ``collect-error``
event, which makes the checker's divergence unchecked. Real cluster, one node's container
removed before the copy."""

from __future__ import annotations

import json

import docker
import pytest

from compose.cleanup import LABEL_CLUSTER
from compose.cluster import KafkaCluster
from compose.config import ClusterConfig
from runner.config import RunConfig
from runner.orchestrator import Run

pytestmark = pytest.mark.cluster


def test_a_failed_copy_is_a_collect_error_event(tmp_path, docker_client: docker.DockerClient
                                                ) -> None:
    cfg = ClusterConfig(brokers=2)
    run = Run(RunConfig(scenario="collect", out=str(tmp_path)), None, progress=print)
    try:
        with KafkaCluster(cfg) as cluster:
            cluster.create_topic("t", partitions=1, replication_factor=2)
            cluster.node(2).container.remove(force=True)  # its log and data are gone
            run.collect(cluster)
    finally:
        run.events.close()
    events = [json.loads(line) for line in
              (run.run_dir / "history" / "events.jsonl").read_text().splitlines()]
    errors = [e for e in events if e["kind"] == "collect-error"]
    assert {(e["detail"]["node"], e["detail"]["what"]) for e in errors} == {(2, "log"),
                                                                           (2, "data")}
    assert all(e["phase"] == "instant" and e["targets"] == [2] for e in errors)
    assert "NotFound" in errors[0]["detail"]["error"] or "404" in errors[0]["detail"]["error"]
    # the node that was there was copied
    assert (run.run_dir / "logs" / "data" / "broker-1" / "t-0").is_dir()
    assert not (run.run_dir / "logs" / "data" / "broker-2").exists()
    # Nothing of this test's cluster is left (other clusters of this session, shared by
    # other tests, carry the same owner pid and may still be up).
    assert not docker_client.containers.list(all=True, filters={
        "label": f"{LABEL_CLUSTER}={cluster.name}"})
