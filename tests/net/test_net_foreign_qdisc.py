"""A host's own root qdisc is never replaced (issue 47): our shaping builds its tree only
over the kernel's default, and a ``slow`` fault on a host with shaping of its own is a
``fault-error`` that leaves the host as it was.

The host is a namespace of this test reached the way a node of nodes.toml is: through a
shell that parses each command as one string (``ip netns exec NS sh -c``, where ssh has the
node's login shell), so the fault runs the very commands it runs over SSH."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from netlab import Lan

from contract.events import FAULT_ERROR, EventLog
from nemesis.faults import network
from nemesis.faults.base import FaultContext, FaultError
from nemesis.faults.network import Slow
from nemesis.net import iptables, tc
from nemesis.net.netns import NetNS
from nemesis.schedule import Nemesis

MakeLan = Callable[[int], Lan]
#: A team's own shaping: an htb root with a class of its own.
OWN_SHAPING = (["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb",
                "default", "10"],
               ["tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb",
                "rate", "50mbit"])


def _tc_state(ns: NetNS) -> tuple[str, str]:
    """eth0's qdiscs and classes, as tc prints them (no statistics; this tc prints classes
    only as text)."""
    return (ns.run(["tc", "qdisc", "show", "dev", "eth0"]).stdout,
            ns.run(["tc", "class", "show", "dev", "eth0"]).stdout)


def test_kernel_defaults_are_replaceable_and_nothing_else() -> None:
    assert tc.kernel_default(None)
    assert tc.kernel_default(("noqueue", "0:")) and tc.kernel_default(("mq", "0:"))
    assert not tc.kernel_default(("fq_codel", "8001:"))  # added by hand, even of that kind
    assert not tc.kernel_default(("htb", "1:"))
    assert not tc.kernel_default(("htb", tc.ROOT_HANDLE))  # ours: install says so itself


def test_a_slow_fault_leaves_a_hosts_own_root_qdisc_alone(make_lan: MakeLan, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    lan = make_lan(2)
    host, other = lan[0], lan[1]
    for cmd in OWN_SHAPING:
        host.ns.run(cmd)
    before = _tc_state(host.ns)
    assert "htb 1: root" in before[0] and "class htb 1:10" in before[1]
    remote = NetNS.over_ssh(host.name, ("ip", "netns", "exec", host.ns.ref, "sh", "-c"), 22)
    nodes = {1: SimpleNamespace(ip=host.ip, ns=remote),
             2: SimpleNamespace(ip=other.ip, ns=other.ns)}
    cluster: Any = SimpleNamespace(nodes=nodes, brokers=[1, 2], node=nodes.__getitem__)
    monkeypatch.setattr(network, "netns_of", lambda node: node.ns)
    events = tmp_path / "events.jsonl"
    nemesis = Nemesis(FaultContext(cluster, EventLog(events), "t", random.Random(0)))

    with pytest.raises(FaultError, match="root qdisc of its own"):
        nemesis.start_fault(Slow(target="1", delay_ms=0, rate_kbit=1000, loss=0.1))

    # before: the htb root was replaced by ours (and healing ours left the kernel default)
    assert _tc_state(host.ns) == before
    assert lan.no_rules_left()  # the loss rules were never added
    assert tc.root_handle(other.ns, "eth0") == tc.KERNEL_HANDLE  # nor the other's cap
    assert nemesis.active == []
    lines = [json.loads(ln) for ln in events.read_text().splitlines()]
    assert [e["kind"] for e in lines] == [FAULT_ERROR]
    assert "NotOurs" in lines[0]["detail"]["error"] and "htb 1:" in lines[0]["detail"]["error"]
    assert not iptables.ours_in_save(host.ns)
