"""group-coordinator-chaos (scenarios/groups.py) on a real cluster with KIP-848's protocol:
faults aimed at the group's coordinator (the ``coordinator`` target resolves it when each
fault starts), three members rebalanced by the broker, and the verdict valid with every
consumer live after the heal. Nightly (a 60 s run); the matrix runs the classic protocol.
coordinator-cut-from-controllers: only the coordinator cut from the controllers (the cut's
relation checked without a cluster; the run nightly, about 2 min)."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from nemesis.faults import quorum
from nemesis.faults.base import FaultError
from nemesis.faults.factory import make_fault
from nemesis.net import Node
from tests.scenarios.test_operations_scenarios import assert_expected, run_scenario
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


def _ctx(coordinator: int) -> SimpleNamespace:
    ids = [1, 2, 3, 101, 102, 103]
    return SimpleNamespace(
        cluster=SimpleNamespace(controller_ids=[101, 102, 103], brokers=[1, 2, 3],
                                nodes=dict.fromkeys(ids, None), active_controller=lambda: 101,
                                group_coordinator=lambda group, timeout_s=15: coordinator),
        rng=random.Random(0), topic="chaos")


def test_one_broker_is_cut_from_the_controllers_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a stand-in namespace: the spec is only built, never applied
    nodes = [Node(f"n{i}", (f"10.0.0.{i}",), object())  # type: ignore[arg-type]
             for i in (1, 2, 3, 101, 102, 103)]
    monkeypatch.setattr(quorum, "cluster_nodes",
                        lambda ctx: [*nodes, Node("client", ("10.0.0.254",), None)])
    fault = make_fault("voter-partition", "coordinator", {"shape": "broker-from-controllers"})
    assert isinstance(fault, quorum.VoterPartition)
    spec = fault.spec(_ctx(2))  # type: ignore[arg-type]
    ctl = {"n101", "n102", "n103"}
    assert set(spec.cuts) == {("n2", c) for c in ctl} | {(c, "n2") for c in ctl}
    assert fault.targets == [2] and fault.describe()["target"] == "coordinator"
    with pytest.raises(FaultError, match="not a controller"):
        quorum.VoterPartition("broker-from-controllers", "101").spec(_ctx(2))  # type: ignore[arg-type]
    # the other shapes still aim at the quorum, whatever target the caller passed
    assert quorum.VoterPartition("voter-minority", "coordinator").target == "controller"


@pytest.mark.cluster
@pytest.mark.nightly
def test_coordinator_cut_from_the_controllers(tmp_path, docker_client):  # type: ignore[no-untyped-def]
    res = run_scenario("coordinator-cut-from-controllers", tmp_path)
    assert not [e for e in res["_events"] if e["kind"] == "fault-error"]
    sit = [e for e in res["_events"] if e["kind"] == "situation"]
    cuts = [e for e in res["_events"] if e["kind"] == "voter-partition" and e["phase"] == "start"]
    assert len(sit) == 1 and len(cuts) == 1, (sit, cuts)
    coordinator = sit[0]["detail"]["coordinator"]
    assert cuts[0]["targets"] == [coordinator], cuts
    logs = Path(res["_run_dir"]) / "logs"
    assert any(f"Fencing broker {coordinator} at epoch" in (logs / f"node-{n}.log").read_text()
               for n in (101, 102, 103))  # the cut outlasted the broker's session
    assert_expected(res)
