"""Pure parts of nemesis.net (no kernel): shapes, rule plans, tc trees, netlink framing."""

from __future__ import annotations

import json
import struct

import pytest

from nemesis.net import NamespaceGone, NetNS, Node, PartitionSpec, nfqueue, plan_rules, tc


def nodes(count: int, with_ns: bool = True) -> list[Node]:
    return [Node(f"n{i}", (f"10.231.0.{i + 1}",), NetNS("named", f"x{i}", i + 1) if with_ns
                 else None) for i in range(count)]


def test_shapes_as_relations() -> None:
    five = nodes(5)
    ring = PartitionSpec.ring(five)
    assert {b for a, b in ring.cuts if a == "n0"} == {"n2", "n3"}
    split = PartitionSpec.split(five, [["n0", "n1"]])
    assert len(split.cuts) == 2 * 2 * 3
    bridge = PartitionSpec.bridge(five, "n2", ["n0", "n1"])
    assert bridge.can_reach("n0", "n2") and bridge.can_reach("n4", "n2")
    assert not bridge.can_reach("n1", "n3")
    one = PartitionSpec.one_way(five, "n0", "n1")
    assert one.cuts == {("n0", "n1")} and one.can_reach("n1", "n0")
    json.dumps(ring.describe())


def test_specs_refuse_nonsense() -> None:
    with pytest.raises(ValueError):
        PartitionSpec.ring(nodes(3))
    with pytest.raises(ValueError):
        PartitionSpec.custom(nodes(2), [("n0", "n9")])
    with pytest.raises(ValueError):  # neither side can hold the rule
        PartitionSpec.isolate(nodes(2, with_ns=False), "n0")


def test_plan_prefers_the_receiver_and_counts_every_ip() -> None:
    a = Node("a", ("10.231.0.1", "fd00::1"), NetNS("named", "a", 1))
    b = Node("b", ("10.231.0.2",), NetNS("named", "b", 2))
    rules = plan_rules(PartitionSpec.isolate([a, b], "a"))
    assert sorted((r.node, r.hook, r.binary, r.match) for r in rules) == [
        ("a", "INPUT", "iptables", ("-s", "10.231.0.2")),
        ("b", "INPUT", "ip6tables", ("-s", "fd00::1")),
        ("b", "INPUT", "iptables", ("-s", "10.231.0.1")),
    ]


def test_tc_tree_for_peers_with_netem() -> None:
    cmds = tc.tree_commands("eth0", 3000, ["10.231.0.2", "fd00::2"], tc.netem_args(100, 10))
    text = [" ".join(c) for c in cmds]
    assert text[0].endswith("root handle 4b43: htb default 2")
    assert any("netem delay 100ms 10ms" in t for t in text)
    assert any("match ip dst 10.231.0.2/32 flowid 4b43:1" in t for t in text)
    assert any("protocol ipv6" in t and "ip6 dst fd00::2/128" in t for t in text)
    whole = tc.tree_commands("eth0", 3000, [])
    assert whole[0][-1] == "1" and len(whole) == 2


def test_nfqueue_packet_parsing_and_flow_keys() -> None:
    ip = bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 231, 0, 1, 10, 231, 0, 2,
                0x1F, 0x40, 0x1B, 0x5F])
    body = (struct.pack("=BBH", 2, 0, 0)
            + nfqueue._attr(nfqueue.NFQA_PACKET_HDR, struct.pack("!IHB", 77, 0x0800, 1))
            + nfqueue._attr(nfqueue.NFQA_PAYLOAD, ip))
    packet = nfqueue._parse_packet(memoryview(body))
    assert packet is not None and packet.packet_id == 77 and packet.head == ip
    assert nfqueue.flow_key(ip) == bytes([17]) + ip[12:20] + ip[20:24]


def test_a_missing_container_or_namespace_is_gone() -> None:
    with pytest.raises(NamespaceGone):
        NetNS.named("kc-test-no-such-namespace")
    with pytest.raises(NamespaceGone):
        NetNS.from_pid(2**22 + 12345)
    with pytest.raises(NamespaceGone):
        NetNS.from_container("kc-test-no-such-container")
