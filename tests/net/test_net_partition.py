"""Partitions of every shape, shown with real UDP/TCP traffic between test namespaces."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable

from netlab import Lan, eventually

from nemesis.net import NetNS, Node, Partitioner, PartitionSpec, iptables, plan_rules

MakeLan = Callable[[int], Lan]


def expected_matrix(spec: PartitionSpec, lan: Lan) -> dict[tuple[str, str], bool]:
    """A UDP round trip a->b->a works iff neither direction is cut."""
    return {
        (a.name, b.name): spec.can_reach(a.name, b.name) and spec.can_reach(b.name, a.name)
        for a in lan.hosts for b in lan.hosts if a is not b
    }


def apply_check_heal(lan: Lan, spec: PartitionSpec) -> None:
    lan.echo_servers()
    handle = Partitioner().apply(spec)
    assert lan.reach_matrix() == expected_matrix(spec, lan)
    assert handle.heal() == len(handle.rules)
    assert lan.no_rules_left()
    assert eventually(lambda: all(lan.reach_matrix().values()))
    assert handle.heal() == 0, "a second heal finds nothing to do"


def test_isolate_cuts_one_node_both_ways(make_lan: MakeLan) -> None:
    lan = make_lan(3)
    spec = PartitionSpec.isolate(lan.nodes(), "h0")
    assert spec.cuts == {("h0", "h1"), ("h1", "h0"), ("h0", "h2"), ("h2", "h0")}
    apply_check_heal(lan, spec)


def test_split_majority_minority(make_lan: MakeLan) -> None:
    lan = make_lan(4)
    apply_check_heal(lan, PartitionSpec.split(lan.nodes(), [["h0"], ["h1", "h2", "h3"]]))


def test_split_halves(make_lan: MakeLan) -> None:
    lan = make_lan(4)
    apply_check_heal(lan, PartitionSpec.split(lan.nodes(), [["h0", "h1"], ["h2", "h3"]]))


def test_ring_reaches_only_neighbours(make_lan: MakeLan) -> None:
    lan = make_lan(4)
    spec = PartitionSpec.ring(lan.nodes())
    assert not spec.can_reach("h0", "h2") and spec.can_reach("h0", "h3")
    apply_check_heal(lan, spec)


def test_bridge_node_reaches_both_halves(make_lan: MakeLan) -> None:
    lan = make_lan(4)
    spec = PartitionSpec.bridge(lan.nodes(), bridge="h1", left=["h0"])
    assert spec.can_reach("h0", "h1") and spec.can_reach("h2", "h1")
    assert not spec.can_reach("h0", "h3") and not spec.can_reach("h2", "h0")
    apply_check_heal(lan, spec)


def test_leader_cut_from_followers_still_reached_by_client(make_lan: MakeLan) -> None:
    lan = make_lan(4)  # h0 leader, h1/h2 followers, h3 client
    apply_check_heal(lan, PartitionSpec.cut_from(lan.nodes(), "h0", ["h1", "h2"]))


def test_client_without_namespace_cut_from_one_broker(make_lan: MakeLan) -> None:
    """The client (the host, whose namespace we never touch) is a node with ns=None: the
    rules all go into the broker's namespace (INPUT from the client, OUTPUT to it)."""
    lan = make_lan(3)
    lan.echo_servers()
    client = Node("client", (lan[2].ip,), None)
    spec = PartitionSpec.cut_from([lan[0].node(), lan[1].node(), client], "h0", ["client"])
    handle = Partitioner().apply(spec)
    assert not lan.reaches(lan[2], lan[0]) and not lan.reaches(lan[0], lan[2])
    assert lan.reaches(lan[2], lan[1]) and lan.reaches(lan[1], lan[0])
    assert not iptables.ours_in_save(lan[2].ns), "nothing may be written where ns=None"
    assert {r.hook for r in handle.rules} == {"INPUT", "OUTPUT"}
    handle.heal()
    assert lan.no_rules_left()
    assert eventually(lambda: lan.reaches(lan[2], lan[0]))


def test_partition_stops_an_open_connection_at_once(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    lan.echo_servers()
    ping = lan.held_connection(lan[0], lan[1])

    assert ping(2) == "ok"
    handle = Partitioner().apply(PartitionSpec.isolate(lan.nodes(), "h1"))
    assert ping(1) == "timeout", "established connections must stop too, not only new ones"
    handle.heal()
    assert ping(10) == "ok", "TCP retransmits and the connection recovers after heal"


def test_a_reset_cut_refuses_at_once_and_resets_open_connections(make_lan: MakeLan) -> None:
    """A reset cut of the client (ns=None) from h0: TCP answered with resets, so a connect
    is refused at once (a DROP leaves it to time out) and the connection the client held
    is reset when the cut begins (ss -K), before it sends anything."""
    lan = make_lan(2)
    lan.echo_servers()
    client = Node("client", (lan[1].ip,), None)
    ping = lan.held_connection(lan[1], lan[0])
    assert ping(2) == "ok"
    spec = dataclasses.replace(PartitionSpec.cut_from([lan[0].node(), client], "h0",
                                                      ["client"]), reset=True)
    def held() -> list[str]:
        out = lan[0].ns.run(["ss", "-Htn", "state", "established", "dst", lan[1].ip]).stdout
        return out.splitlines()

    assert held()
    handle = Partitioner().apply(spec)
    assert not held(), "closed when the cut began, though the client sent nothing"
    assert ping(2) == "error", "the open connection is reset, not left to time out"
    got = lan.run(lan[1], "tcp-connect", lan[0].ip, "7008", "--timeout", "5")
    assert got["error"] == "ConnectionRefusedError" and got["seconds"] < 1.0
    assert handle.heal() == len(handle.rules)
    assert lan.no_rules_left()
    assert eventually(lambda: lan.tcp_works(lan[1], lan[0]))


def test_healing_one_partition_keeps_another_and_our_chains(make_lan: MakeLan) -> None:
    """Two cuts at once: a heal deletes its own rules in one batch per family and keeps the
    other's (and our chains, which still hold them); the last heal removes the chains."""
    lan = make_lan(3)
    lan.echo_servers()
    first = Partitioner().apply(PartitionSpec.isolate(lan.nodes(), "h0"))
    second = Partitioner().apply(PartitionSpec.cut_from(lan.nodes(), "h1", ["h2"]))
    assert first.heal() == len(first.rules)
    left = [ln for h in lan.hosts for ln in iptables.ours_in_save(h.ns)]
    assert left and all("KAFKA_CHAOS" in ln or second.id in ln for ln in left), left
    assert not any(first.id in ln for ln in left)
    assert eventually(lambda: lan.reaches(lan[0], lan[1]) and lan.reaches(lan[0], lan[2]))
    assert not lan.reaches(lan[1], lan[2]), "the other cut still holds"
    assert second.heal() == len(second.rules)
    assert lan.no_rules_left()
    assert eventually(lambda: all(lan.reach_matrix().values()))


def test_heal_tolerates_a_vanished_namespace_entered_by_pid(make_lan: MakeLan) -> None:
    """h1 is entered by pid (nsenter), like a container. Its namespace then disappears (the
    container restarted): heal still heals the others, twice, without errors."""
    lan = make_lan(3)
    lan.echo_servers()
    sleeper = lan[1].ns.popen(["sleep", "600"])
    try:
        # ip netns exec enters the namespace after the fork: wait until the pid is inside
        assert eventually(lambda: NetNS.from_pid(sleeper.pid).inode == lan[1].ns.inode)
        by_pid = NetNS.from_pid(sleeper.pid)
        nodes = [lan[0].node(), Node("h1", (lan[1].ip,), by_pid), lan[2].node()]
        handle = Partitioner().apply(PartitionSpec.isolate(nodes, "h1"))
        assert iptables.ours_in_save(by_pid), "rules went in through nsenter"
        assert not lan.reaches(lan[0], lan[1])
        for proc in list(lan.procs):  # everything living in h1 goes, then h1 itself
            if proc.args[:4] == lan[1].ns.prefix():
                proc.kill()
                proc.wait()
    finally:
        sleeper.kill()
        sleeper.wait()
    subprocess.run(["ip", "netns", "del", lan[1].ns.ref], check=True)
    assert not by_pid.exists()
    handle.heal()
    handle.heal()
    assert not iptables.ours_in_save(lan[0].ns) and not iptables.ours_in_save(lan[2].ns)
    assert lan.reaches(lan[0], lan[2])


def test_plan_puts_cuts_at_the_receiver() -> None:
    a, b = Node("a", ("10.231.0.1",), NetNS("named", "x", 1)), Node("b", ("10.231.0.2",), None)
    spec = PartitionSpec.one_way([a, b], "b", "a", mode="connections")
    rules = {(r.node, r.hook, r.match) for r in plan_rules(spec)}
    assert rules == {("a", "INPUT", ("-s", "10.231.0.2", "-m", "conntrack", "--ctdir",
                                     "ORIGINAL"))}
