"""A heal over SSH that cannot reach its node is not a heal (issue 47).

The listings a heal reads (``iptables -S``, ``tc qdisc show``) run with ``check=False``: a
missing chain or qdisc is an answer. Over SSH, ssh's own failure (exit 255) is not: before,
it read as "no rule there" and the partition's end was written while its rules stayed on
the node. Here a real ``ssh`` reaches for a loopback port where nothing listens, through
the command line a node of nodes.toml gets (:meth:`SshTarget.argv`)."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path
from typing import Any

import pytest

from compose.ssh import SshTarget, SshUnreachable
from contract.events import NEMESIS_ERROR, EventLog
from nemesis.faults.base import FaultContext
from nemesis.faults.network import Partition, Slow
from nemesis.net import iptables, partition, tc
from nemesis.net.netns import NetNS
from nemesis.net.partition import Node, PartitionHandle, PartitionSpec, plan_rules
from nemesis.net.shaping import ShapingHandle
from nemesis.schedule import Nemesis


def _nothing_listening() -> int:
    """A loopback port nothing listens on (bound once to pick it, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable(tmp_path: Path, nid: int) -> NetNS:
    port = _nothing_listening()
    target = SshTarget("127.0.0.1", port=port, connect_timeout_s=2,
                       known_hosts=str(tmp_path / "known_hosts"))
    return NetNS.over_ssh(f"n{nid}-127.0.0.1:{port}", target.argv(), port)


@pytest.fixture
def unreachable_ns(tmp_path: Path) -> NetNS:
    return _unreachable(tmp_path, 1)


def test_a_listing_over_ssh_that_could_not_run_raises_unreachable(unreachable_ns: NetNS):
    with pytest.raises(SshUnreachable, match="unreachable over SSH"):
        unreachable_ns.run(["iptables", "-w", "10", "-S"], check=False)
    # before: 0 rules deleted (healed) and no qdisc of ours (nothing to remove)
    with pytest.raises(SshUnreachable):
        iptables.delete_tagged(unreachable_ns, "part-0")
    with pytest.raises(SshUnreachable):
        tc.remove(unreachable_ns, ["eth0"])


def test_the_heal_is_retried_and_the_partition_not_ended(tmp_path: Path, unreachable_ns: NetNS,
                                                         monkeypatch: pytest.MonkeyPatch):
    calls: list[str] = []
    delete = iptables.delete_tagged

    def counted(ns: NetNS, fault_id: str) -> int:
        calls.append(fault_id)
        return delete(ns, fault_id)

    monkeypatch.setattr(partition.iptables, "delete_tagged", counted)
    cluster: Any = None  # the fault's heal goes only through its handle
    events = tmp_path / "events.jsonl"
    nemesis = Nemesis(FaultContext(cluster, EventLog(events), "t", random.Random(0)))
    nemesis.heal_retry_s = 2
    # a partition in force on a node we can no longer reach (its start needs the node)
    n1 = Node("n1", ("10.0.0.11",), unreachable_ns)
    spec = PartitionSpec.custom([n1, Node("client", ("10.0.0.1",), None)],
                                {("client", "n1")}, shape="client")
    fault = Partition("client", "1")
    fault._handle = PartitionHandle("part-0", spec, plan_rules(spec))
    fault.targets = [1]
    fault._started(nemesis.ctx, shape="client")
    nemesis.active.append(fault)

    nemesis.heal_all(settle=False)

    assert len(calls) >= 2, calls  # retried with backoff while unreachable, then given up
    assert nemesis.active == []
    lines = [json.loads(ln) for ln in events.read_text().splitlines()]
    assert [e["phase"] for e in lines if e["kind"] == "partition"] == ["start"]  # no end
    errors = [e["detail"]["message"] for e in lines if e["kind"] == NEMESIS_ERROR]
    assert len(errors) == 1 and "unreachable over SSH" in errors[0], errors


def test_one_unreachable_node_does_not_keep_the_others_cut(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    tried: list[NetNS] = []
    delete = iptables.delete_tagged

    def counted(ns: NetNS, fault_id: str) -> int:
        tried.append(ns)
        return delete(ns, fault_id)

    monkeypatch.setattr(partition.iptables, "delete_tagged", counted)
    n1 = Node("n1", ("10.0.0.11",), _unreachable(tmp_path, 1))
    n2 = Node("n2", ("10.0.0.12",), _unreachable(tmp_path, 2))
    spec = PartitionSpec.custom([n1, n2], {("n1", "n2"), ("n2", "n1")})
    handle = PartitionHandle("part-0", spec, plan_rules(spec))
    with pytest.raises(SshUnreachable):
        handle.heal()
    assert sorted(map(str, tried)) == sorted([str(n1.ns), str(n2.ns)])  # each was tried
    assert not handle.healed


def test_a_slow_fault_keeps_every_handle_it_could_not_heal(tmp_path: Path):
    events = tmp_path / "events.jsonl"
    cluster: Any = None
    ctx = FaultContext(cluster, EventLog(events), "t", random.Random(0))
    handles = [ShapingHandle(f"shape-{i}", _unreachable(tmp_path, i), {}, "netem", ["eth0"])
               for i in (1, 2)]
    fault = Slow(target="1", rate_kbit=1000)
    fault.targets = [1]
    fault._handles = list(handles)
    fault._started(ctx)
    for _ in range(2):  # before, the first try lost one handle and the third ended the fault
        with pytest.raises(SshUnreachable):
            fault.stop(ctx)
        assert fault._handles == handles
    lines = [json.loads(ln) for ln in events.read_text().splitlines()]
    assert [e["phase"] for e in lines] == ["start"]
