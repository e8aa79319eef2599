"""group-coordinator-chaos (scenarios/groups.py) on a real cluster with KIP-848's protocol:
faults aimed at the group's coordinator (the ``coordinator`` target resolves it when each
fault starts), three members rebalanced by the broker, and the verdict valid with every
consumer live after the heal. Nightly (a 60 s run); the matrix runs the classic protocol."""

from __future__ import annotations

import pytest

from tests.scenarios.test_operations_scenarios import run_scenario
from workloads.config import ConsumerConfig


@pytest.mark.cluster
@pytest.mark.nightly
def test_kip848_group_under_coordinator_faults(tmp_path, docker_client):  # type: ignore[no-untyped-def]
    res = run_scenario("group-coordinator-chaos", tmp_path, group_protocol="consumer")
    assert res["valid"] is True and res["expectations"]["met"], res["expectations"]
    faults = [e for e in res["_events"] if e["kind"] in ("kill", "partition")
              and e["phase"] == "start"]
    assert any(e["detail"].get("target") == "coordinator" for e in faults), faults
    assert any(e["kind"] == "rebalance" for e in res["_events"])
    assert res["anomalies"]["stuck-consumer"]["count"] == 0


def test_the_consumer_protocol_leaves_the_session_to_the_broker() -> None:
    conf = ConsumerConfig(group_protocol="consumer").kafka_config()
    assert conf["group.protocol"] == "consumer"
    assert "session.timeout.ms" not in conf and "heartbeat.interval.ms" not in conf
    assert "group.protocol" not in ConsumerConfig().kafka_config()
