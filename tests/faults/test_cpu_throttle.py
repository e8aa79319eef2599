"""CPU starvation (cpu-throttle), built through the registry and proven by the kernel's own
throttling counters of the broker's cgroup."""

from __future__ import annotations

import json

from compose.cluster import KafkaCluster
from nemesis.faults.factory import make_fault
from tests.faults.conftest import produce


def cpu_stat(cluster: KafkaCluster, nid: int) -> dict[str, int]:
    """The node's cgroup CPU counters (cgroup v1 or v2), read inside its container."""
    code, out = cluster.node(nid).exec(
        "cat /sys/fs/cgroup/cpu/cpu.stat 2>/dev/null || cat /sys/fs/cgroup/cpu.stat")
    assert code == 0, out
    return {k: int(v) for k, v in (line.split() for line in out.splitlines() if line.strip())}


def test_cpu_throttle_starves_the_leader_until_it_ends(cluster, ctx):  # noqa: ANN001
    fault = make_fault("cpu-throttle", "leader:0", {"share": 0.05})
    fault.start(ctx)
    try:
        (leader,) = fault.targets
        assert leader == cluster.describe(ctx.topic)[0].leader
        host = cluster.node(leader).reload()["HostConfig"]
        assert (host["CpuPeriod"], host["CpuQuota"]) == (100_000, 5_000)
        before = cpu_stat(cluster, leader)
        # Slow, not dead: every write to the starved leader is still acknowledged.
        sent = produce(cluster.bootstrap_servers, ctx.topic, 300, timeout_s=90)
        assert [e for e, _, _ in sent if e is not None] == []
        during = cpu_stat(cluster, leader)
        # The kernel throttled the broker's cgroup while it served them.
        assert during["nr_throttled"] > before["nr_throttled"]
    finally:
        fault.stop(ctx)
    assert cluster.node(leader).reload()["HostConfig"]["CpuQuota"] in (-1, 0)
    after = cpu_stat(cluster, leader)
    sent = produce(cluster.bootstrap_servers, ctx.topic, 300)
    assert [e for e, _, _ in sent if e is not None] == []
    assert cpu_stat(cluster, leader)["nr_throttled"] == after["nr_throttled"]
    lines = [json.loads(x) for x in ctx.events.path.read_text().splitlines()]
    assert [(e["kind"], e["phase"], e["targets"], e["detail"].get("share")) for e in lines] == [
        ("cpu-throttle", "start", [leader], 0.05), ("cpu-throttle", "end", [leader], None)]
