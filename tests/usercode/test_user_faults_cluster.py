"""The test-body fault API on a real cluster: faults start at once and stop with their block,
every one lands in the history as start/end events, random schedules run in the background,
and leaving the session or the fixture heals everything, also when the body raised."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chaos.user_api import ChaosSession
from compose.cluster import KafkaCluster
from contract.events import END, START, Event, parse_events

pytest_plugins = ["pytester"]


def _events(run_dir: Path) -> list[Event]:
    return parse_events((run_dir / "history" / "events.jsonl").read_text())[0]


def _pairs(events: list[Event]) -> list[tuple[str, str, list[int]]]:
    return [(e.kind, e.phase, list(e.targets)) for e in events if e.phase in (START, END)
            and e.kind != "phase"]


def test_session_heals_when_the_body_raises(kafka_cluster: KafkaCluster, tmp_path: Path) -> None:
    session = ChaosSession.open(kafka_cluster, out=tmp_path, name="raises")
    with pytest.raises(RuntimeError, match="the body failed"), session:  # noqa: PT012
        paused = session.pause(2)
        assert paused.targets == [2] and kafka_cluster.node(2).status() == "paused"
        cut = session.partition(3, shape="isolate")
        assert cut.targets == [3] and cut.active
        raise RuntimeError("the body failed")
    assert kafka_cluster.node(2).status() == "running"
    assert session.active == []
    # Healed newest first: the partition, then the pause.
    assert _pairs(_events(session.run_dir)) == [
        ("pause", START, [2]), ("partition", START, [3]),
        ("partition", END, [3]), ("pause", END, [2])]
    kafka_cluster.wait_brokers([1, 2, 3], timeout_s=90)


def test_random_faults_run_in_the_background_and_heal_stops_them(
        kafka_cluster: KafkaCluster, tmp_path: Path) -> None:
    with ChaosSession.open(kafka_cluster, out=tmp_path, name="random", seed=7) as chaos:
        schedule = chaos.random(kinds=["pause", "slow"], interval=2, duration=7)
        assert schedule.running
        assert schedule.wait(timeout=60), "the schedule outlived its duration"
        assert schedule.errors == []
        done = _pairs(chaos.history_events())
        starts = [p for p in done if p[1] == START]
        assert len(starts) >= 2, done  # ~one fault per 2 s interval in 7 s
        assert all(p[0] in ("pause", "slow") for p in done)
        assert sum(p[1] == END for p in done) == len(starts)  # each ended by the schedule
        # A long schedule is cut short by heal(): nothing keeps running or stays active.
        long = chaos.random(kinds=["pause"], interval=1, duration=600, targets=[1])
        before = len(chaos.history_events())
        chaos.heal()
        assert not long.running and chaos.active == []
        later = _pairs(chaos.history_events()[before:])
        assert all(p[2] == [1] for p in later)
        assert sum(p[1] == START for p in later) == sum(p[1] == END for p in later)
    for nid in (1, 2, 3):
        assert kafka_cluster.node(nid).status() == "running"
    kafka_cluster.wait_brokers([1, 2, 3], timeout_s=90)


def test_slow_and_power_loss_with_their_parameters(kafka_cluster: KafkaCluster,
                                                   tmp_path: Path) -> None:
    kafka_cluster.create_topic("ledger", partitions=1, replication_factor=3)
    with ChaosSession.open(kafka_cluster, out=tmp_path, name="power", topic="ledger") as chaos:
        with chaos.slow(1, delay_ms=40, jitter_ms=5) as slow:
            assert slow.targets == [1] and slow.active
        assert not slow.active
        leader = kafka_cluster.describe("ledger")[0].leader
        with chaos.power_loss("leader", partition=0) as power:  # the session's topic
            assert power.targets == [leader]
            assert kafka_cluster.node(leader).status() != "running"
        assert kafka_cluster.node(leader).status() == "running"
        events = [e for e in chaos.history_events() if e.kind in ("slow", "power-loss")]
    assert [(e.kind, e.phase, list(e.targets)) for e in events] == [
        ("slow", START, [1]), ("slow", END, [1]),
        ("power-loss", START, [leader]), ("power-loss", END, [leader])]
    assert events[0].detail["delay_ms"] == 40 and events[0].detail["jitter_ms"] == 5
    # The ISR just before the power went, of the topic the fault was aimed through.
    assert set(events[2].detail["isr_before"]) == {"ledger:0"}
    kafka_cluster.wait_brokers([1, 2, 3], timeout_s=90)


@pytest.mark.cluster  # its inner session starts the cluster
def test_the_chaos_fixture_heals_when_the_body_raises(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
def test_body_fails(chaos, kafka_cluster):
    print("RUN_DIR", chaos.run_dir)
    kafka_cluster.create_topic("orders", partitions=1, replication_factor=1)
    fault = chaos.pause("leader", topic="orders", partition=0)
    print("TARGETS", fault.targets)
    raise RuntimeError("my code broke")
""")
    res = pytester.runpytest("--chaos-brokers", "1", "--chaos-runs-dir",
                             str(pytester.path / "runs"), "-s")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "my code broke" in out
    run_dir = Path(re.search(r"RUN_DIR (\S+)", out).group(1))  # type: ignore[union-attr]
    assert json.loads(re.search(r"TARGETS (\[.*\])", out).group(1)) == [1]  # type: ignore[union-attr]
    assert _pairs(_events(run_dir)) == [("pause", START, [1]), ("pause", END, [1])]
    assert run_dir.is_relative_to(pytester.path / "runs" / "user" / "test_body_fails")
