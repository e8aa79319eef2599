"""One-way partitions: what 'a cannot reach b' means, in both modes, with real traffic.

Definitions checked here ("works" for TCP = connect, send a line, get it echoed back):

* packets mode: a's datagrams to b are lost, b's datagrams to a arrive; TCP works in neither
  direction (each direction of a connection needs the other's packets).
* connections mode: a can neither open a TCP connection to b nor keep using one it opened;
  b opens connections to a and they work in full, including ones open before the cut.
"""

from __future__ import annotations

from collections.abc import Callable

from netlab import Lan, eventually

from nemesis.net import Partitioner, PartitionSpec, arm_conntrack, disarm_conntrack

MakeLan = Callable[[int], Lan]


def test_packets_mode_is_one_way_for_datagrams(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    a, b = lan[0], lan[1]
    lan.echo_servers()
    handle = Partitioner().apply(PartitionSpec.one_way(lan.nodes(), "h0", "h1"))
    assert lan.datagrams(a, b) == 0, "a's datagrams must not reach b"
    assert lan.datagrams(b, a) == 20, "b's datagrams must all reach a"
    assert not lan.tcp_works(a, b), "a cannot connect to b (its SYN is dropped)"
    assert not lan.tcp_works(b, a), "b's SYN reaches a but a's SYN-ACK is dropped"
    handle.heal()
    assert lan.no_rules_left()
    assert eventually(lambda: lan.tcp_works(a, b) and lan.tcp_works(b, a))


def test_connections_mode_blocks_only_what_a_opens(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    a, b = lan[0], lan[1]
    for host in lan.hosts:  # conntrack must see connections from their first packet
        arm_conntrack(host.ns)
    lan.echo_servers()
    a_opened = lan.serve(a, "tcp-hold", b.ip, "7008", stdin=True)
    b_opened = lan.serve(b, "tcp-hold", a.ip, "7008", stdin=True)

    def ping(holder: object, timeout: float) -> str:
        holder.stdin.write(f"ping {timeout}\n")  # type: ignore[attr-defined]
        holder.stdin.flush()  # type: ignore[attr-defined]
        return str(holder.stdout.readline().strip())  # type: ignore[attr-defined]

    assert ping(a_opened, 2) == ping(b_opened, 2) == "ok"
    handle = Partitioner().apply(
        PartitionSpec.one_way(lan.nodes(), "h0", "h1", mode="connections"))
    assert not lan.tcp_works(a, b), "a cannot open a connection to b"
    assert lan.tcp_works(b, a), "b opens connections to a and gets answers"
    assert ping(b_opened, 2) == "ok", "b's connection opened before the cut keeps working"
    assert ping(a_opened, 1) == "timeout", "a's connection opened before the cut stops"
    handle.heal()
    assert ping(a_opened, 10) == "ok", "a's connection recovers after heal"
    assert lan.tcp_works(a, b)
    for host in lan.hosts:
        disarm_conntrack(host.ns)
    assert lan.no_rules_left()
