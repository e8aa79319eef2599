"""The dead-man switch on a cluster reached over SSH: a node undoes our faults by itself when
the run that made them vanishes (SIGKILL mid-fault) or cannot reach it (SSH cut during the
heal), and ``kafka-chaos sweep --nodes`` removes what is left without touching a live run.

Every check of a node's state goes through ``docker exec`` on its container, never our SSH:
the point is that nothing of ours reaches the node after the kill or the cut."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.remote import ExternalCluster, SshNode, read_ssh_connections, ssh_peer
from nemesis.dead_man import SWITCH_PREFIX, arm, disarm, sweep_node
from nemesis.faults.base import FaultContext
from nemesis.faults.network import Partition
from nemesis.faults.process import Pause
from nemesis.schedule import Nemesis
from runner.config import RunConfig, ssh_peer_refusal
from tests.hygiene import share
from tests.run.cli import CLI
from tests.run.held_run import held_scenario, killed_mid_fault, step
from tests.run.ssh_cluster import SshCluster
from workloads import EventLog

DEADLINE_S = 10
pytestmark = pytest.mark.cluster


# Three faults that stay on for minutes: only the switch can end them before that.
HELD = held_scenario(step("pause", "1", "p"), step("partition", "2", "c", 'shape = "isolate"\n'),
                     step("kill", "3", "k"))


@pytest.fixture(scope="module")
def ssh_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshCluster]:
    cluster = SshCluster(tmp_path_factory.mktemp("dead-man") / "ssh")
    share(cluster.name)  # the three tests share it; each leaves it whole (they check)
    with cluster:
        yield cluster


def _sh(cluster: SshCluster, nid: int, cmd: str) -> str:
    """A command on the node through the Docker engine (not our SSH)."""
    code, out = cluster.container(nid).exec_run(["sh", "-c", cmd])
    return out.decode(errors="replace") if code == 0 else f"<exit {code}> {out!r}"


def _broker_state(cluster: SshCluster, nid: int) -> str:
    """``running``, ``paused`` or ``down``, read on the node itself."""
    out = _sh(cluster, nid, "pid=$(pgrep -o -f '[k]afka.Kafka') && ps -o stat= -p $pid")
    if out.startswith("<exit"):
        return "down"
    return "paused" if out.strip().startswith("T") else "running"


def _ours(cluster: SshCluster, nid: int) -> list[str]:
    save = _sh(cluster, nid, "iptables-save; ip6tables-save")
    return [ln for ln in save.splitlines() if "KAFKA_CHAOS" in ln or "kafka-chaos" in ln]


def _whole(cluster: SshCluster) -> None:
    for s in cluster.specs:
        assert _broker_state(cluster, s.node_id) == "running", s.node_id
        assert _ours(cluster, s.node_id) == [], s.node_id


def test_sigkill_mid_fault_the_nodes_heal_themselves(ssh_cluster: SshCluster,
                                                     tmp_path: Path) -> None:
    with killed_mid_fault(tmp_path, HELD, ssh_cluster.bootstrap_servers,
                          ssh_cluster.nodes_file, DEADLINE_S, ["kill", "partition", "pause"]):
        # the faults are really on, seen on the nodes themselves
        assert _broker_state(ssh_cluster, 1) == "paused"
        assert _ours(ssh_cluster, 2), "the partition left no rules on node 2"
        assert _broker_state(ssh_cluster, 3) == "down"
    # nothing of ours runs any more; within the deadline (+ the watchdog's 1 s poll and
    # the broker's start) every node is whole again
    for attempt in Retrying(stop=stop_after_delay(DEADLINE_S + 40), wait=wait_fixed(0.5),
                            reraise=True):
        with attempt:
            _whole(ssh_cluster)
    fired = [s.node_id for s in ssh_cluster.specs
             if not _sh(ssh_cluster, s.node_id,
                        f"ls {SWITCH_PREFIX}*/fired").startswith("<exit")]
    assert fired == [1, 2, 3], fired
    ExternalCluster(ssh_cluster.bootstrap_servers, ssh_cluster.specs).wait_brokers(
        [1, 2, 3], timeout_s=120)

    # the sweep removes the fired switches (a dead run's) and finds nothing else to undo
    swept = subprocess.run([*CLI, "sweep", "--nodes", str(ssh_cluster.nodes_file)],
                           capture_output=True, text=True, timeout=120)
    assert swept.returncode == 0, swept.stderr
    assert swept.stdout.count("removed switch") == 3, swept.stdout
    for s in ssh_cluster.specs:
        assert _sh(ssh_cluster, s.node_id, f"ls -d {SWITCH_PREFIX}*").startswith("<exit")


def test_ssh_cut_during_the_heal_the_node_heals_itself(ssh_cluster: SshCluster,
                                                       tmp_path: Path) -> None:
    cluster = ExternalCluster(ssh_cluster.bootstrap_servers, ssh_cluster.specs)
    cluster.start()
    node = cluster.nodes[1]
    assert isinstance(node, SshNode)
    switch = arm(node, "test", DEADLINE_S)
    nemesis = Nemesis(FaultContext(cluster, EventLog(tmp_path / "events.jsonl"), "t",
                                   random.Random(0)))
    nemesis.heal_retry_s = 5
    cut = "iptables -w 10 -I INPUT -p tcp --dport 22 -j DROP"
    try:
        nemesis.start_fault(Pause(target="1"))
        nemesis.start_fault(Partition("isolate", "1"))
        assert _broker_state(ssh_cluster, 1) == "paused" and _ours(ssh_cluster, 1)
        assert _sh(ssh_cluster, 1, cut) == ""
        nemesis.heal_all(settle=False)  # cannot reach the node: retried, then given up
        # the partition's heal reads its rules with a check=False listing: unreachable, not
        # "no rule there" (before, it ended the partition with its rules still on node 1)
        assert any("heal of partition failed" in e and "unreachable over SSH" in e
                   for e in nemesis.errors), nemesis.errors
        assert any("heal of pause failed" in e for e in nemesis.errors), nemesis.errors
        assert _ours(ssh_cluster, 2) == _ours(ssh_cluster, 3) == []  # reachable: healed
        events = [json.loads(ln) for ln in (tmp_path / "events.jsonl").read_text().splitlines()]
        assert [e["phase"] for e in events if e["kind"] == "partition"] == ["start"]
        for attempt in Retrying(stop=stop_after_delay(DEADLINE_S + 30), wait=wait_fixed(0.5),
                                reraise=True):
            with attempt:
                assert _broker_state(ssh_cluster, 1) == "running"
                assert _ours(ssh_cluster, 1) == []  # the switch removed our chains
    finally:
        _sh(ssh_cluster, 1, cut.replace(" -I ", " -D "))
        node.ssh.close()
    fired = disarm(switch)
    assert fired is not None and any("resumed" in ln for ln in fired.undo), fired


def test_sweep_leaves_a_live_runs_node_alone(ssh_cluster: SshCluster) -> None:
    spec = ssh_cluster.specs[0]
    node = SshNode(spec)
    switch = arm(node, "another run", 600)
    try:
        node.pause()
        report = sweep_node(node)
        assert report.live == [switch.path], report
        assert _broker_state(ssh_cluster, spec.node_id) == "paused"  # left alone
    finally:
        assert disarm(switch) is None
    report = sweep_node(node)  # no live switch now: the paused broker is ours to resume
    assert any("resumed" in ln for ln in report.undo), report
    assert _broker_state(ssh_cluster, spec.node_id) == "running"
    node.ssh.close()


def test_a_run_from_a_listed_nodes_address_is_refused(ssh_cluster: SshCluster,
                                                       tmp_path: Path) -> None:
    """A node-to-node cut would drop the replies of our SSH when we reach a node from another
    node's address: the run refuses before anything starts. Here the address the nodes see
    us come from (this host's on their network, read from $SSH_CONNECTION as the run reads
    it) is listed as a fourth node, as when kafka-chaos runs on a node."""
    seen = read_ssh_connections(ssh_cluster.specs)
    peers = {ssh_peer(text) for text in seen.values()}
    assert len(seen) == 3 and len(peers) == 1 and None not in peers, seen
    here = peers.pop()
    nodes = tmp_path / "nodes.toml"
    nodes.write_text(ssh_cluster.nodes_file.read_text()
                     + f'\n[[node]]\nid = 4\nhost = "{here}"\nroles = "broker"\n')
    out = tmp_path / "runs"
    proc = subprocess.run([*CLI, "run", "--bootstrap-servers", ssh_cluster.bootstrap_servers,
                           "--nodes", str(nodes), "--faults", "kill,partition",
                           "--duration", "30", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.splitlines() == [
        f"kafka-chaos: error: node 1 sees our SSH connection come from {here}, the address "
        "of node 4: a partition between nodes would cut our own SSH (run from a host that "
        "is not a node, or without partition faults)"]
    assert not out.exists()  # nothing started, no run directory
    # the cluster's own nodes.toml: this host is no node, the run may go on
    cfg = RunConfig(bootstrap_servers=ssh_cluster.bootstrap_servers,
                    nodes=str(ssh_cluster.nodes_file), faults=["partition"])
    assert ssh_peer_refusal(cfg) is None
    _whole(ssh_cluster)
