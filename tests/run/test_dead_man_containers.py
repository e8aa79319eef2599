"""The dead-man switch on a cluster of containers that kafka-chaos did not start (the
docker-compose cluster of ``kafka-chaos cluster compose-file``): when the run that faulted
them vanishes (SIGKILL mid-fault) a watchdog on this host undoes our faults by itself, and
``kafka-chaos sweep --nodes`` removes what is left without touching a live run's container.

Every look at a container goes through the engine and the container's namespace directly,
never through kafka-chaos's own fault code."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cleanup import LABEL_CLUSTER
from compose.compose_file import write_compose_files
from compose.config import ClusterConfig
from compose.node import ContainerNode
from compose.nodes_file import RemoteNodeSpec, load_nodes
from compose.remote import ExternalCluster
from nemesis.dead_man import NodeSweep
from nemesis.dead_man_containers import arm, listed_switches, sweep_container
from nemesis.dead_man_watchdog import FIRED, MARK
from nemesis.net import iptables, tc
from nemesis.net.netns import NetNS
from nemesis.net.sweep import pids_marked
from tests.hygiene import share
from tests.run.cli import CLI
from tests.run.held_run import held_scenario, killed_mid_fault, step

DEADLINE_S = 10
pytestmark = pytest.mark.cluster


# Four faults that stay on for minutes: only the switch can end them before that. The
# slow link (a bandwidth cap, tc only) leaves our qdisc on every node that is up.
HELD = held_scenario(step("slow", "2", "s", "delay_ms = 0\nrate_kbit = 4000\n"),
                     step("pause", "1", "p"), step("partition", "2", "c", 'shape = "isolate"\n'),
                     step("kill", "3", "k"))


@dataclass
class Compose:
    """A docker-compose cluster of three nodes and its nodes.toml."""

    folder: Path
    project: str
    bootstrap_servers: str
    specs: list[RemoteNodeSpec]

    @property
    def nodes_file(self) -> Path:
        return self.folder / "nodes.toml"

    def run(self, *args: str) -> None:
        proc = subprocess.run(["docker-compose", "-f", str(self.folder / "docker-compose.yml"),
                               "-p", self.project, *args], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    def container(self, nid: int) -> docker.models.containers.Container:
        return docker.from_env().containers.get(f"{self.project}-node-{nid}")


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    project = f"kc-dm-{secrets.token_hex(3)}"
    folder = tmp_path_factory.mktemp("dead-man-compose")
    # the suite's cluster label: its leak checks look for our rules and qdiscs in these
    # containers after each test (tests/hygiene.py), as in its own shared clusters
    files = write_compose_files(folder, ClusterConfig(brokers=3), project,
                                labels={LABEL_CLUSTER: project})
    share(project)  # the tests share it; each leaves it whole (they check)
    cluster = Compose(folder, project, files.bootstrap_servers, load_nodes(files.nodes))
    try:
        cluster.run("up", "-d")
        ExternalCluster(cluster.bootstrap_servers, cluster.specs).start(ready_timeout_s=120)
        yield cluster
    finally:
        for s in listed_switches():  # a failed test's switches: their watchdogs exit
            if s.name in files.containers:
                shutil.rmtree(s.path, ignore_errors=True)
        cluster.run("down", "-v")


def _state(cluster: Compose, nid: int) -> str:
    """``running``, ``paused`` or ``down``, as the engine says."""
    state = cluster.container(nid).attrs["State"]
    return "paused" if state["Paused"] else "running" if state["Running"] else "down"


def _ours(cluster: Compose, nid: int) -> list[str]:
    """Our iptables chains and rules, and our root qdiscs, in the container's namespace."""
    pid = int(cluster.container(nid).attrs["State"]["Pid"] or 0)
    if not pid:
        return []
    ns = NetNS.from_pid(pid)
    qdiscs = json.loads(ns.run(["tc", "-j", "qdisc", "show"]).stdout or "[]")
    return iptables.ours_in_save(ns) + [f"qdisc on {q['dev']}" for q in qdiscs
                                        if q.get("handle") == tc.ROOT_HANDLE]


def _whole(cluster: Compose) -> None:
    for s in cluster.specs:
        assert _state(cluster, s.node_id) == "running", s.node_id
        assert _ours(cluster, s.node_id) == [], s.node_id


def _switches(cluster: Compose) -> dict[str, list[Path]]:
    """This cluster's switch directories on this host, by container name."""
    names = {s.container for s in cluster.specs}
    found: dict[str, list[Path]] = {}
    for s in listed_switches():
        if s.name in names:
            found.setdefault(s.name, []).append(s.path)
    return found


def test_sigkill_mid_fault_the_containers_heal_themselves(compose: Compose,
                                                          tmp_path: Path) -> None:
    with killed_mid_fault(tmp_path, HELD, compose.bootstrap_servers, compose.nodes_file,
                          DEADLINE_S, ["kill", "partition", "pause", "slow"]):
        # the faults are really on, seen through the engine and the namespaces
        assert _state(compose, 1) == "paused"
        assert any("KAFKA_CHAOS" in ln for ln in _ours(compose, 2)), _ours(compose, 2)
        assert any(ln.startswith("qdisc") for ln in _ours(compose, 2)), _ours(compose, 2)
        assert _state(compose, 3) == "down"
    # nothing of ours runs any more but the watchdogs; within the deadline (+ their 1 s
    # look and the engine's start of node 3) every container is whole again
    for attempt in Retrying(stop=stop_after_delay(DEADLINE_S + 30), wait=wait_fixed(0.5),
                            reraise=True):
        with attempt:
            _whole(compose)
    switches = _switches(compose)
    assert set(switches) == {s.container for s in compose.specs}, switches
    assert all((p / FIRED).exists() for paths in switches.values() for p in paths), switches
    ExternalCluster(compose.bootstrap_servers, compose.specs).wait_brokers(
        [1, 2, 3], timeout_s=120)

    # the sweep removes the fired switches (a dead run's) and finds nothing else to undo
    swept = subprocess.run([*CLI, "sweep", "--nodes", str(compose.nodes_file)],
                           capture_output=True, text=True, timeout=120)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert swept.stdout.count("removed switch") == 3, swept.stdout
    assert _switches(compose) == {}
    _whole(compose)


def _sweep(node: ContainerNode) -> NodeSweep:
    assert node.remote.container is not None
    return sweep_container(node.node_id, node.remote.container)


def _watchdog(switch: Path) -> int:
    """The pid of the switch's watchdog."""
    pids = [p for p in pids_marked(MARK)
            if str(switch).encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(pids) == 1, pids
    return pids[0]


def test_sweep_leaves_a_live_runs_container_alone(compose: Compose) -> None:
    node = ContainerNode(compose.specs[0])
    switch = arm(node, "another run", 600)
    try:
        # detached: not a child of ours, in a session of its own
        stat = Path(f"/proc/{_watchdog(switch.path)}/stat").read_text().rsplit(") ", 1)[1]
        ppid, session = int(stat.split()[1]), int(stat.split()[3])
        assert ppid != os.getpid() and session != os.getsid(0), stat
        node.pause()
        report = _sweep(node)
        assert report.live == [str(switch.path)], report
        assert _state(compose, node.node_id) == "paused"  # left alone
    finally:
        assert switch.disarm() is None
    assert not switch.path.exists() and _switches(compose) == {}
    # no live switch now: the paused container is ours
    report = _sweep(node)
    assert report.undo == ["unpaused"], report
    _whole(compose)


def test_sweep_starts_a_container_only_a_dead_switch_shows_we_stopped(compose: Compose) -> None:
    """A dead switch (its watchdog killed with the run, as in a reboot) still says a run
    was faulting the container: the sweep starts it. Without one it is its owner's."""
    node = ContainerNode(compose.specs[2])
    switch = arm(node, "a run killed with its watchdog", 600)
    os.kill(_watchdog(switch.path), signal.SIGKILL)
    try:
        node.kill()
        swept = subprocess.run([*CLI, "sweep", "--nodes", str(compose.nodes_file)],
                               capture_output=True, text=True, timeout=120)
        assert swept.returncode == 0, swept.stdout + swept.stderr
        assert (f"node {node.node_id}: started the container; removed switch {switch.path}"
                in swept.stdout.splitlines()), swept.stdout
        assert _state(compose, node.node_id) == "running" and _switches(compose) == {}
        node.kill()
        # no switch of ours: the container is its owner's, left stopped
        assert _sweep(node).undo == []
        assert _state(compose, node.node_id) == "down"
    finally:
        if _state(compose, node.node_id) == "down":
            node.start()
        shutil.rmtree(switch.path, ignore_errors=True)
    _whole(compose)


def test_a_run_starts_by_undoing_what_a_dead_run_left(compose: Compose,
                                                      tmp_path: Path) -> None:
    """The start of a run sweeps the container nodes too, before it looks them up (a
    killed container has no address): a container a dead run killed is started."""
    node = ContainerNode(compose.specs[2])
    switch = arm(node, "a run killed with its watchdog", 600)
    os.kill(_watchdog(switch.path), signal.SIGKILL)
    try:
        node.kill()
        proc = subprocess.run([*CLI, "run", "--bootstrap-servers", compose.bootstrap_servers,
                               "--nodes", str(compose.nodes_file), "--faults", "none",
                               "--duration", "3", "--liveness", "0", "--no-check",
                               "--no-report", "--out", str(tmp_path / "runs")],
                              capture_output=True, text=True, timeout=300)
        # unchecked (--no-check): the verdict is unknown, exit 2, once the run went through
        assert proc.returncode == 2 and "drain complete" in proc.stdout, \
            proc.stdout[-3000:] + proc.stderr[-3000:]
        assert (f"sweep: node {node.node_id}: started the container; removed switch "
                f"{switch.path}") in proc.stdout, proc.stdout[-3000:]
    finally:
        if _state(compose, node.node_id) == "down":
            node.start()
        shutil.rmtree(switch.path, ignore_errors=True)
    _whole(compose)


def test_a_switch_that_fired_while_the_run_lived_says_so_at_disarm(compose: Compose) -> None:
    """A run that stalls past the deadline (nothing renews the lease here) finds its
    container healed by the switch, and the disarm reports when and what."""
    node = ContainerNode(compose.specs[1])
    switch = arm(node, "a stalled run", 4)
    try:
        node.pause()
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.2),
                                reraise=True):
            with attempt:
                assert _state(compose, node.node_id) == "running"
    finally:
        fired = switch.disarm()
    assert fired is not None and fired.node_id == node.node_id, fired
    assert fired.undo == ["unpaused"], fired
    _whole(compose)
