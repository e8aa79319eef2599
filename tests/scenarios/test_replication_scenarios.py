"""The replication scenarios (scenarios/replication.py) on real clusters: each run
must reach its mechanism and show the outcome the scenario promises, per Kafka version.

Cluster tests take ~2 minutes each (one run: cluster, 30-45 s workload, drain, Spark check).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from compose.image import DEFAULT_KAFKA_VERSION
from nemesis.faults.network import Partition
from nemesis.faults.process import Pause
from runner.orchestrator import run
from scenarios import SCENARIOS
from scenarios.replication import SCENARIOS as REPLICATION
from scenarios.replication import elr_default
from scenarios.replication_steps import SITUATION_MECHANISM
from tests.support.verdicts import assert_only_accepted_bug, assert_script_faults_declared

OLD = "3.9.1"  # newest 3.x: KRaft honours unclean election, no Eligible Leader Replicas
NEW = DEFAULT_KAFKA_VERSION  # ELR on by default (new clusters, 4.1+)
# The same scenario again on the older version: a long repetition, nightly only.
VERSIONS = [pytest.param(OLD, id="kafka-3.9", marks=pytest.mark.nightly),
            pytest.param(NEW, id=f"kafka-{NEW}")]


def run_scenario(name: str, tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    sc = SCENARIOS[name]
    cfg = sc.run_config(out=str(tmp_path), report=False, **overrides)
    outcome = run(cfg, sc, progress=print)
    assert outcome.completed, outcome.error
    assert_script_faults_declared(sc, outcome.run_dir)
    res = outcome.results
    assert res is not None, "no results"
    print({k: res[k] for k in ("valid", "expectations", "mechanism") if k in res},
          res["stats"]["unavailable_s"], {k: v["count"] for k, v in res["anomalies"].items()})
    return res


def count(res: dict[str, Any], kind: str) -> int:
    """The count of a kind; for divergence only when the replicas' logs were compared (an
    unchecked 0 proves nothing)."""
    entry = res["anomalies"][kind]
    assert entry.get("checked", True) is True, f"{kind} not checked: {entry.get('reason')}"
    return int(entry["count"])


def lost_explained(res: dict[str, Any]) -> str:
    """The guarantee model's reason and the first unexcused lost writes, for a failure
    message: enough to tell a checker gap from a real loss without the run directory."""
    lost = res["anomalies"]["lost"]
    keep = ("producer", "seq", "acked_offset", "complete_ns", "excused", "faults_at_ack",
            "partition_state")
    shown = [{k: e.get(k) for k in keep} for e in lost.get("examples", [])
             if not e.get("excused")][:3]
    return f"lost={lost['count']} excused={lost.get('excused', 0)}: {lost['why']}; {shown}"


def assert_scenario_held(res: dict[str, Any]) -> None:
    """Mechanism observed (so not ``unknown``) and the scenario's own expectations met; a
    scenario with an idempotent producer that accepts librdkafka#4953 has no duplicate or
    reorder that bug does not explain."""
    assert res["mechanism"]["observed"], res["mechanism"]
    assert res["expectations"]["met"], res["expectations"]
    assert res["stats"]["drain_complete"]
    if res["accepted_known"]:
        assert_only_accepted_bug(res)


def assert_resets_excused(res: dict[str, Any]) -> None:
    """Every step back of a live reader is a reset onto reused offsets, named as such."""
    back = res["anomalies"]["nonmonotonic-poll"]
    assert back.get("excused", 0) == back["count"], back
    for e in back["examples"]:
        assert e["excuse"] == "truncation" and "truncation point" in e["summary"], e


# ---------------------------------------------------------------- pure (no cluster)
def test_all_five_are_registered_with_docs_and_situation_mechanism():
    names = {s.name for s in REPLICATION}
    assert names == {"acks1-leader-failover", "unclean-election",
                     "follower-restart-leader-crash", "slow-follower", "last-replica-standing"}
    for sc in REPLICATION:
        assert SCENARIOS[sc.name] is sc
        assert sc.summary and len(sc.doc) > 200 and sc.script is not None
        for version in (OLD, NEW):
            cfg = sc.run_config()
            cfg.validate()
            assert SITUATION_MECHANISM in sc.mechanism_for(cfg, version)
            assert sc.expect_for(cfg, version)


def test_unclean_expectation_follows_the_setting():
    sc = SCENARIOS["unclean-election"]
    on, off = sc.run_config(), sc.run_config(unclean=False)
    # a live consumer reads the lone leader's tail: its offsets are reused, not lost
    assert on.consumers == 1 and sc.expect_for(on, NEW)["anomalies"]["reused-offset"] == ">0"
    assert sc.expect_for(on, NEW)["valid"] is True
    drain_only = sc.run_config(consumers=0)
    assert sc.expect_for(drain_only, NEW)["anomalies"]["lost"] == ">0"
    assert sc.expect_for(off, NEW)["anomalies"]["lost"] == "==0"
    assert sc.expect_for(off, NEW)["anomalies"]["reused-offset"] == "==0"
    # the election (or the wait offline) that follows the verified situation, not any before
    assert {"kind": "stale-leader-elected", "after": "situation"} in sc.mechanism_for(on, OLD)
    assert {"kind": "offline", "after": "situation"} in sc.mechanism_for(off, OLD)
    assert on.broker_config["unclean.leader.election.interval.ms"] == "1000"


def test_last_replica_standing_expectation_depends_on_elr():
    sc = SCENARIOS["last-replica-standing"]
    cfg = sc.run_config()
    assert not elr_default("3.9.1") and not elr_default("4.0.0") and elr_default("4.1.0")
    assert sc.expect_for(cfg, OLD)["anomalies"]["reused-offset"] == ">0"
    assert sc.expect_for(sc.run_config(consumers=0), OLD)["anomalies"]["lost"] == ">0"
    assert sc.expect_for(cfg, NEW)["anomalies"]["lost"] == "==0"
    assert sc.expect_for(cfg, NEW)["anomalies"]["reused-offset"] == "==0"
    assert {"kind": "offline"} in sc.mechanism_for(cfg, OLD)
    assert {"kind": "leader-changed"} in sc.mechanism_for(cfg, NEW)


# ---------------------------------------------------------------- real clusters
@pytest.mark.cluster
def test_acks1_leader_failover_loses_the_acknowledged_tail(tmp_path):
    res = run_scenario("acks1-leader-failover", tmp_path)
    assert_scenario_held(res)
    assert count(res, "lost") > 0 and res["anomalies"]["lost"]["allowed"]
    # the live consumer read, but never past the high watermark: nothing it read vanished
    assert res["stats"]["reads_by_reader"].get("c0", 0) > 0
    assert count(res, "reused-offset") == 0
    assert res["valid"] is True


@pytest.mark.cluster
@pytest.mark.parametrize("version", VERSIONS)
def test_unclean_election_elects_a_stale_follower_and_loses_writes(tmp_path, version):
    res = run_scenario("unclean-election", tmp_path, kafka_version=version)
    assert_scenario_held(res)
    # the live consumer read the lone leader's tail; the stale leader reused its offsets
    assert count(res, "reused-offset") > 0 and res["anomalies"]["reused-offset"]["allowed"]
    assert count(res, "lost") == 0 or res["anomalies"]["lost"]["allowed"]
    assert_resets_excused(res)
    assert count(res, "divergence") == 0 and res["valid"] is True


def _first_cut_strays(nem: Any) -> None:
    """The unclean-election script, with its leader paused for 5 s as its first attempt cuts
    the followers off: the controller fences the leader and a follower takes over (what a
    starved controller did in CI run 41), so that attempt never has its lone leader."""
    start = nem.start_fault

    def start_fault(fault: Any) -> Any:
        started = start(fault)
        if isinstance(fault, Partition) and not strayed:
            strayed.append(start(Pause(fault.target)))
            nem.wait(5)
            nem.end_fault(strayed[0])
        return started

    strayed: list[Any] = []
    nem.start_fault = start_fault
    SCENARIOS["unclean-election"].script(nem)


@pytest.mark.cluster
@pytest.mark.nightly
def test_unclean_election_makes_its_situation_again_after_an_attempt_strayed(tmp_path):
    sc = dataclasses.replace(SCENARIOS["unclean-election"], script=_first_cut_strays)
    outcome = run(sc.run_config(out=str(tmp_path), report=False, duration=90.0), sc)
    assert outcome.completed, outcome.error
    res = outcome.results
    assert res is not None
    events = [json.loads(line) for line in
              (outcome.run_dir / "history" / "events.jsonl").read_text().splitlines()]
    pauses = [e["ts_ns"] for e in events if e["kind"] == "pause" and e["phase"] == "start"]
    situations = [e for e in events if e["kind"] == "situation"]
    assert len(pauses) == 1 and len(situations) == 1, (pauses, situations)
    # the first attempt strayed and left no situation; a later one reached it
    assert situations[0]["detail"]["attempt"] >= 2 and situations[0]["ts_ns"] > pauses[0]
    assert_scenario_held(res)
    assert count(res, "reused-offset") > 0 and res["valid"] is True


@pytest.mark.cluster
def test_no_unclean_election_keeps_writes_and_pays_in_unavailability(tmp_path):
    res = run_scenario("unclean-election", tmp_path, unclean=False)
    assert_scenario_held(res)
    assert count(res, "lost") == 0 and res["valid"] is True
    assert res["stats"]["unavailable_s"] > 3


@pytest.mark.cluster
def test_follower_restart_then_leader_crash_keeps_everything(tmp_path):
    # One round proves the point (its situation is part of the mechanism asserted); the
    # scenario's own 60 s, as the CLI and the nightly matrix run it, makes ~3 rounds.
    res = run_scenario("follower-restart-leader-crash", tmp_path, duration=30.0)
    assert_scenario_held(res)
    assert res["valid"] is True
    assert count(res, "lost") == 0 and count(res, "divergence") == 0


@pytest.mark.cluster
def test_slow_follower_refuses_writes_and_loses_none(tmp_path):
    res = run_scenario("slow-follower", tmp_path)
    assert_scenario_held(res)
    assert res["valid"] is True
    assert res["stats"]["writes"]["fail"] > 0
    assert res["stats"]["errors"].get("NOT_ENOUGH_REPLICAS", 0) > 0
    assert count(res, "failed-visible") == 0 and count(res, "lost") == 0


@pytest.mark.cluster
@pytest.mark.parametrize("version", VERSIONS)
def test_last_replica_standing_per_version(tmp_path, version):
    res = run_scenario("last-replica-standing", tmp_path, kafka_version=version)
    assert_scenario_held(res)
    assert count(res, "divergence") == 0 and count(res, "inconsistent-offset") == 0
    if elr_default(version):
        assert count(res, "lost") == 0 and res["valid"] is True
        assert count(res, "reused-offset") == 0
    else:
        # what the consumer read vanished with the power loss and its offsets were reused
        assert count(res, "reused-offset") > 0
        assert res["anomalies"]["reused-offset"]["allowed"], res["anomalies"]["reused-offset"]
        assert count(res, "lost") == 0 or res["anomalies"]["lost"]["allowed"], \
            lost_explained(res)
        assert_resets_excused(res)
