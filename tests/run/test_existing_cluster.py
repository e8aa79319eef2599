"""`kafka-chaos run --bootstrap-servers ... --nodes nodes.toml`: a cluster kafka-chaos did not
start, its brokers faulted over SSH only (kill by pid, SIGSTOP/SIGCONT, iptables on the node),
checked with the same checker; and the run leaves the cluster as it found it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from compose.cleanup import extra_labels
from compose.remote import SshNode
from contract.known_bugs import EPOCH_BUMP_RESEND
from runner.orchestrator import run
from scenarios.toml_file import load_scenarios
from tests.run.cli import CLI
from tests.run.ssh_cluster import SshCluster
from tests.support.verdicts import assert_only_accepted_bug


def _window(fault: str, target: str, ref: str, seconds: float, shape: str = "") -> str:
    """Scenario steps: start ``fault`` at ``target``, hold it ``seconds``, stop it."""
    shape_line = f'shape = "{shape}"\n' if shape else ""
    return (f'[[scenario.steps]]\naction = "start"\nfault = "{fault}"\n{shape_line}'
            f'target = "{target}"\nas = "{ref}"\n\n'
            f'[[scenario.steps]]\naction = "wait"\nseconds = {seconds}\n\n'
            f'[[scenario.steps]]\naction = "stop"\nref = "{ref}"\n\n')


def _scenario(name: str, config: str, *windows: str) -> str:
    # The leader faults can make the idempotent producer resend after an epoch bump
    # (librdkafka#4953): accepted like the built-in scenarios do, each record named.
    return (f'[[scenario]]\nname = "{name}"\nsummary = "{name}"\nsettle = 3\n'
            f'accept_known = ["{EPOCH_BUMP_RESEND}"]\n\n'
            f"[scenario.config]\n{config}\n\n" + "".join(windows))


SCENARIO = _scenario(
    "over-ssh", "duration = 90\nrate = 100",
    _window("kill", "leader:0", "kill", 3),
    _window("pause", "leader:1", "pause", 3),
    _window("partition", "leader:2", "isolate", 4, shape="isolate"),
    _window("partition", "leader:0", "cut-client", 3, shape="client"),
    _window("power-loss", "follower:1", "power", 2),
) + '[[scenario.steps]]\naction = "wait-until"\ncondition = "isr-full"\ntimeout = 60\n'


def _run(scenarios: Path, name: str, out: Path, bootstrap: str, nodes: Path) -> dict:
    sc = load_scenarios(scenarios)[name]
    cfg = sc.run_config(out=str(out), bootstrap_servers=bootstrap, nodes=str(nodes))
    outcome = run(cfg, sc, progress=lambda _msg: None)
    assert outcome.completed and outcome.results is not None, outcome.error
    return outcome.results


def _events(run_dir: Path) -> list[dict]:
    lines = (run_dir / "history" / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _started_at(cluster: SshCluster) -> dict[int, str]:
    return {s.node_id: cluster.container(s.node_id).attrs["State"]["StartedAt"]
            for s in cluster.specs}


@pytest.mark.cluster
def test_run_against_a_cluster_reached_over_ssh(tmp_path):
    scenarios = tmp_path / "scenarios.toml"
    scenarios.write_text(SCENARIO)
    out = tmp_path / "runs"
    with SshCluster(tmp_path / "ssh") as cluster:
        pids_before = {s.node_id: SshNode(s).pid() for s in cluster.specs}
        started = _started_at(cluster)
        # In-process (the session's warm Spark checks it); the CLI maps its options to the
        # same RunConfig fields (tests/run/test_cli.py covers its refusals).
        results = _run(scenarios, "over-ssh", out, cluster.bootstrap_servers,
                       cluster.nodes_file)
        run_dir = (out / "latest").resolve()
        assert_only_accepted_bug(results)
        assert results["valid"] is True, results.get("unknown_reasons")
        stats = results["stats"]
        assert stats["writes"]["ok"] > 500, stats
        assert results["anomalies"]["lost"]["count"] == 0

        # Every fault of the script started and ended, on real targets.
        ev = _events(run_dir)
        for kind, n in (("kill", 1), ("pause", 1), ("partition", 2), ("power-loss", 1)):
            starts = [e for e in ev if e["kind"] == kind and e["phase"] == "start"]
            ends = [e for e in ev if e["kind"] == kind and e["phase"] == "end"]
            assert len(starts) == n and len(ends) == n, (kind, starts, ends)
            assert all(e["targets"] for e in starts), starts
        killed = next(e for e in ev if e["kind"] == "kill" and e["phase"] == "start")["targets"]
        # Power loss cut the unflushed tail of the target's log on its host (over SSH).
        power = next(e for e in ev if e["kind"] == "power-loss" and e["phase"] == "start")
        lost = power["detail"]["lost"][str(power["targets"][0])]
        assert sum(p["removed_batches"] for p in lost.values()) > 0, power

        # The kill was a kill of the broker process on its host: a new pid there, while the
        # hosts themselves (the containers, which only run sshd) were never restarted.
        pids_after = {s.node_id: SshNode(s).pid() for s in cluster.specs}
        assert all(pids_after.values()), pids_after
        assert pids_after[killed[0]] != pids_before[killed[0]]
        assert _started_at(cluster) == started
        assert all(not cluster.container(s.node_id).attrs["State"]["Paused"]
                   for s in cluster.specs)

        # Left as found: no rules of ours on any node, the run's own topic deleted.
        for s in cluster.specs:
            save = s.ssh.run("iptables-save", timeout=30).stdout
            assert "kafka-chaos" not in save and "KAFKA_CHAOS" not in save, save
        run_json = json.loads((run_dir / "run.json").read_text())
        topic = run_json["workload"]["topic"]
        assert topic.startswith("chaos-")
        topics = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(
            timeout=10).topics
        assert topic not in topics
        assert run_json["cluster"]["kafka_version"] == cluster.kafka_version
        assert (run_dir / "logs" / f"node-{killed[0]}.log").stat().st_size > 0
        # The data copy for the divergence check holds the run's topic only.
        copied = {p.name for p in (run_dir / "logs" / "data").glob("broker-*/*")}
        assert copied and all(n.startswith(f"{topic}-") for n in copied), copied


COMPOSE_SCENARIO = _scenario(
    "compose", "duration = 60\nrate = 100",
    _window("kill", "leader:0", "kill", 2),
    _window("pause", "leader:1", "pause", 2),
    _window("partition", "leader:2", "cut", 3, shape="isolate"),
)


def _compose(folder: Path, project: str, *args: str) -> str:
    proc = subprocess.run(["docker-compose", "-f", str(folder / "docker-compose.yml"),
                           "-p", project, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.cluster
def test_compose_file_starts_a_cluster_that_runs_take_faults_through_the_engine(tmp_path):
    import docker

    project = f"kc-compose-{tmp_path.name[-12:].lower().replace('_', '-')}"
    folder = tmp_path / "compose"
    proc = subprocess.run([*CLI, "cluster", "compose-file", "-o", str(folder),
                           "--project", project], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    nodes = folder / "nodes.toml"
    bootstrap = next(w for line in nodes.read_text().splitlines()
                     for w in [line.split("--bootstrap-servers ")[-1].split()[0]]
                     if "--bootstrap-servers" in line)
    scenarios = tmp_path / "scenarios.toml"
    scenarios.write_text(COMPOSE_SCENARIO)
    engine = docker.from_env()
    owned = {"label": f"io.kafka-chaos.compose={project}"}
    # The suite's tags for this test (tests/hygiene.py) reach the compose cluster too, so
    # the suite's leak checks see what an interrupted test leaves of it.
    tagged = {"label": [f"{k}={v}" for k, v in extra_labels().items()]}
    assert tagged["label"]
    try:
        _compose(folder, project, "up", "-d")
        started = {c.name: c.attrs["State"]["StartedAt"]
                   for c in engine.containers.list(filters=owned)}
        assert len(started) == 3
        assert {c.name for c in engine.containers.list(filters=tagged)} == set(started)
        assert len(engine.volumes.list(filters=tagged)) == 3
        assert len(engine.networks.list(filters=tagged)) == 1
        results = _run(scenarios, "compose", tmp_path / "runs", bootstrap, nodes)
        run_dir = (tmp_path / "runs" / "latest").resolve()
        assert_only_accepted_bug(results)
        assert results["valid"] is True and results["stats"]["writes"]["ok"] > 300
        ev = _events(run_dir)
        assert {e["kind"] for e in ev if e["phase"] == "start"} >= {"kill", "pause", "partition"}
        # The kill went through the engine: the killed node's container was started again.
        killed = next(e for e in ev if e["kind"] == "kill" and e["phase"] == "start")["targets"]
        now = {c.name: c.attrs["State"]["StartedAt"]
               for c in engine.containers.list(filters=owned)}
        assert set(now) == set(started)  # all left running
        assert {n for n in now if now[n] != started[n]} == {f"{project}-node-{killed[0]}"}
    finally:
        _compose(folder, project, "down", "-v")
    assert engine.containers.list(all=True, filters=owned) == []
    assert engine.volumes.list(filters=owned) == []
