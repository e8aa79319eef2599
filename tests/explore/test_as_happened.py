"""A run's schedule as it happened, from literal events and leader samples: the times, the
anchored targets and the parameters a replay runs with, and the file it becomes."""

from __future__ import annotations

import tomllib

import pytest

from contract.events import Event
from runner.config import RunConfigError
from runner.explore.as_happened import (
    anchor,
    leaders_at,
    replay_config,
    scenario_doc,
    schedule,
    steps,
    to_toml,
)
from scenarios.toml_file import scenario_from_table

S = 1_000_000_000
T0 = 100 * S


def workload(start: int = T0, end: int | None = None) -> list[Event]:
    out = [Event(start, "phase", "start", (), {"name": "workload"})]
    if end is not None:
        out.append(Event(end, "phase", "end", (), {"name": "workload"}))
    return out


#: (ts_ns, partition, leader, replicas): broker 2 leads partition 0, broker 3 partition 1.
SAMPLES = [(T0, 0, 2, (1, 2, 3)), (T0, 1, 3, (1, 2, 3)),
           (T0 + 20 * S, 0, 1, (1, 2, 3))]


def test_a_random_target_is_anchored_to_the_role_the_node_had_when_hit() -> None:
    leaders = leaders_at(SAMPLES, T0 + 5 * S)
    assert leaders == {0: (2, (1, 2, 3)), 1: (3, (1, 2, 3))}
    assert anchor("random", [2], leaders) == "leader:0"
    assert anchor("random", [1], leaders) == "follower:0"  # leads nothing: a follower
    assert anchor("2", [3], leaders) == "leader:1"  # ids are anchored as well
    # after the leader moved, broker 2 is a follower
    assert anchor("random", [2], leaders_at(SAMPLES, T0 + 21 * S)) == "follower:0"
    # a spec that names a fact stays; several nodes keep their ids
    assert anchor("leader:1", [3], leaders) == "leader:1"
    assert anchor("majority", [3, 1], leaders) == "1,3"
    assert anchor("random", [7], {}) == "7"  # no sample: the id


def test_faults_become_at_start_stop_steps_at_their_seconds() -> None:
    events = [
        *workload(end=T0 + 40 * S),
        Event(T0 + 3 * S, "slow", "start", (2,), {"target": "random", "delay_ms": 30.0,
                                                  "jitter_ms": 0.0, "loss": 0.0,
                                                  "rate_kbit": None}),
        Event(T0 + 5 * S, "slow", "end", (2,), {"target": "random"}),
        Event(T0 + 6 * S, "fault-error", "instant", (), {"fault": "kill", "error": "x"}),
        Event(T0 + 9_960_000_000, "power-loss", "start", (1, 2, 3), {"target": "all"}),
        Event(T0 + 13 * S, "power-loss", "end", (1, 2, 3), {"target": "all"}),
        Event(T0 + 20 * S, "pause", "start", (3,), {"target": "follower:0"}),  # never ended
    ]
    sched = schedule(events, SAMPLES)
    assert [(f.kind, f.target, f.start_s, f.end_s) for f in sched.faults] == [
        ("slow", "leader:0", 3.0, 5.0), ("power-loss", "all", 10.0, 13.0),
        ("pause", "follower:0", 20.0, None)]
    assert sched.faults[0].params == {"delay_ms": 30.0, "jitter_ms": 0.0, "loss": 0.0}
    assert sched.settle_s == 20.0  # from the last step (20 s) to the workload's end (40 s)
    assert steps(sched) == [
        {"action": "at", "seconds": 3.0},
        {"action": "start", "fault": "slow", "target": "leader:0", "as": "f1",
         "delay_ms": 30.0, "jitter_ms": 0.0, "loss": 0.0},
        {"action": "at", "seconds": 5.0}, {"action": "stop", "ref": "f1"},
        {"action": "at", "seconds": 10.0},
        {"action": "start", "fault": "power-loss", "target": "all", "as": "f2"},
        {"action": "at", "seconds": 13.0}, {"action": "stop", "ref": "f2"},
        {"action": "at", "seconds": 20.0},
        {"action": "start", "fault": "pause", "target": "follower:0", "as": "f3"}]


def test_a_one_way_cut_keeps_its_peer_and_halves_keep_their_spec() -> None:
    events = [
        *workload(),
        Event(T0 + S, "partition", "start", (2, 1), {"shape": "one-way", "target": "random"}),
        Event(T0 + 2 * S, "partition", "end", (2, 1), {}),
        Event(T0 + 3 * S, "partition", "start", (1,), {"shape": "halves", "target": "random"}),
    ]
    faults = schedule(events, SAMPLES).faults
    assert [(f.target, f.params) for f in faults] == [
        ("leader:0", {"shape": "one-way", "peer": "follower:0"}),
        ("random", {"shape": "halves"})]


def test_a_history_without_a_workload_has_no_schedule() -> None:
    sched = schedule([Event(T0, "kill", "start", (1,), {"target": "1"})], SAMPLES)
    assert sched.faults == []


RUN_JSON = {"scenario": "safe-config-chaos", "cluster": {"kafka_version": "3.9.1"},
            "options": {"scenario": "safe-config-chaos", "out": "runs", "brokers": 3,
                        "faults": ["kill"], "fault_interval": 5.0, "targets": ["leader"],
                        "acks": "1", "idempotence": None, "kafka_version": None,
                        "image": None, "duration": 30.0, "topic_config": {"x.y": "1"}}}


def test_the_replay_config_pins_the_kafka_version_and_drops_the_random_faults() -> None:
    cfg = replay_config(RUN_JSON)
    assert cfg == {"brokers": 3, "acks": "1", "duration": 30.0, "topic_config": {"x.y": "1"},
                   "faults": [], "kafka_version": "3.9.1"}
    with pytest.raises(RunConfigError, match="no options"):
        replay_config({"scenario": "x"})


def test_the_replay_file_loads_as_a_scenario_that_runs_the_same_steps() -> None:
    events = [*workload(end=T0 + 30 * S),
              Event(T0 + 2 * S, "kill", "start", (2,), {"target": "random"}),
              Event(T0 + 4 * S, "kill", "end", (2,), {"target": "random"})]
    doc = scenario_doc("replay-x", "x as it happened", replay_config(RUN_JSON),
                       schedule(events, SAMPLES), {"anomalies": {"lost": "==0"}})
    text = to_toml(doc)
    sc = scenario_from_table(tomllib.loads(text)["scenario"][0])
    assert [s.describe() for s in sc.script.steps] == [  # type: ignore[union-attr]
        "at 2s", "start kill at leader:0 as f1", "at 4s", "stop f1"]
    assert sc.settle_s == 26.0
    assert sc.expect == {"anomalies": {"lost": "==0"}}
    cfg = sc.run_config()
    assert (cfg.kafka_version, cfg.acks, cfg.faults, cfg.duration) == ("3.9.1", "1", [], 30.0)
    assert sc.script_faults == ("kill",)


@pytest.mark.parametrize("seconds", [-1, float("nan"), float("inf"), True, "3"])
def test_an_at_step_needs_seconds_after_the_start(seconds: object) -> None:
    entry = {"name": "x", "summary": "x", "steps": [{"action": "at", "seconds": seconds}]}
    with pytest.raises(RunConfigError, match="seconds"):
        scenario_from_table(entry)


def test_a_fault_starts_when_applying_it_began_not_when_it_took_effect() -> None:
    """A power loss's start event is written once every log was cut (seconds on a loaded
    host); the replay strikes at the second the cut began (``began_ns``), so it does not
    drift later by the cut's duration on every replay. Older histories have no began_ns."""
    events = [
        *workload(end=T0 + 40 * S),
        Event(T0 + 16 * S, "power-loss", "start", (1, 2, 3),
              {"target": "all", "began_ns": T0 + 14 * S}),
        Event(T0 + 18 * S, "power-loss", "end", (1, 2, 3), {"target": "all"}),
        Event(T0 + 20 * S, "pause", "start", (3,), {"target": "follower:0"}),
        Event(T0 + 22 * S, "pause", "end", (3,), {"target": "follower:0"}),
    ]
    sched = schedule(events, SAMPLES)
    assert [(f.kind, f.start_s, f.end_s) for f in sched.faults] == [
        ("power-loss", 14.0, 18.0), ("pause", 20.0, 22.0)]  # was 16.0
    assert "began_ns" not in sched.faults[0].params
