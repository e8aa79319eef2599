"""The NFQUEUE delayer's life cycle: killed, orphaned, stopped, swept; and its capacity."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from netlab import Lan, eventually
from test_net_shaping import throughput_kbit

from nemesis.net import (
    NetNS,
    Partitioner,
    PartitionSpec,
    Shaper,
    arm_conntrack,
    iptables,
    sweep,
    tc,
)
from nemesis.net.shaping import start_delayer
from nemesis.net.sweep import delayer_pids

MakeLan = Callable[[int], Lan]


def rtt_ms(lan: Lan) -> float:
    result = lan.ping(lan[0], lan[1], count=5, interval=0.01, wait=1.0)
    return max(result["rtts_ms"]) if result["received"] == 5 else float("inf")


def nfqueue_rules(lan: Lan) -> list[str]:
    return [line for line in iptables.ours_in_save(lan[0].ns) if "NFQUEUE" in line]


def gone(pid: int) -> bool:
    return pid not in delayer_pids()


def test_killed_delayer_lets_traffic_flow(make_lan: MakeLan) -> None:
    """--queue-bypass: with no one bound to the queue, packets pass instead of vanishing."""
    lan = make_lan(2)
    lan.echo_servers()
    handle = Shaper("nfqueue").apply(lan[0].ns, delay_ms=200)
    assert handle.delayer is not None
    assert rtt_ms(lan) >= 180.0
    os.kill(handle.delayer.pid, signal.SIGKILL)
    handle.delayer.proc.wait(10)
    assert nfqueue_rules(lan), "a SIGKILLed delayer cannot remove its rule"
    assert eventually(lambda: rtt_ms(lan) < 20.0), "traffic flows, undelayed"
    handle.heal()
    assert lan.no_rules_left()


def test_delayer_cleans_up_when_its_parent_dies(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    lan.echo_servers()
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from nemesis.net import NetNS, Shaper\n"
         f"h = Shaper('nfqueue').apply(NetNS.named({lan[0].ns.ref!r}), delay_ms=200)\n"
         "print(h.delayer.pid, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert rtt_ms(lan) >= 180.0
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout:
            parent.stdout.close()
    assert eventually(lambda: gone(pid)), "the orphaned delayer must exit by itself"
    assert lan.no_rules_left(), "and remove its rule on the way out"
    assert rtt_ms(lan) < 20.0


def test_sigterm_stops_delayer_and_its_rule(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    lan.echo_servers()
    handle = Shaper("nfqueue").apply(lan[0].ns, delay_ms=200)
    assert handle.delayer is not None
    pid = handle.delayer.pid
    os.kill(pid, signal.SIGTERM)
    handle.delayer.proc.wait(10)
    assert lan.no_rules_left() and gone(pid)
    assert rtt_ms(lan) < 20.0
    handle.heal()
    handle.heal()


def test_sweep_removes_everything_ours(make_lan: MakeLan) -> None:
    lan = make_lan(2)
    ns = lan[0].ns
    arm_conntrack(ns)
    Partitioner().apply(PartitionSpec.one_way(lan.nodes(), "h1", "h0"))
    shaping = Shaper("nfqueue").apply(ns, delay_ms=50, loss=0.1, rate_kbit=10000)
    assert shaping.delayer is not None
    pid = shaping.delayer.pid
    report = sweep(ns)
    assert report.rules >= 3 and report.qdiscs == ["eth0"] and report.delayers == [pid]
    assert not iptables.ours_in_save(ns) and gone(pid)
    assert tc.root_handle(ns, "eth0") != tc.ROOT_HANDLE
    assert not sweep(ns).anything_removed, "a second sweep finds nothing"
    shaping.heal()  # handles made before a sweep heal without errors


def test_delayer_capacity(make_lan: MakeLan) -> None:
    """Small datagrams as fast as one Python sender makes them, into a delayed node: how many
    packets/s the delayer releases, and that none is lost (the queue fails open rather than
    drop). Then a TCP flow through it: TCP Small Queues must not throttle it."""
    lan = make_lan(2)
    count = 20000
    plain = lan.flood(lan[0], lan[1], count)
    handle = Shaper("nfqueue").apply(lan[1].ns, delay_ms=5)
    delayed = lan.flood(lan[0], lan[1], count, port=7101)
    tcp_kbit = throughput_kbit(lan, lan[0], lan[1], seconds=1.5)
    handle.heal()
    stats = handle.describe()["delayer_stats"]
    print(f"capacity: without delayer {plain['received'] / plain['seconds']:.0f} pkt/s, "
          f"with delayer {delayed['received'] / delayed['seconds']:.0f} pkt/s; "
          f"{delayed['received']}/{count} arrived; TCP through it {tcp_kbit / 1000:.0f} Mbit/s; "
          f"delayer {stats}")
    assert delayed["received"] >= 0.99 * plain["received"]
    assert stats["packets"] >= count, "every datagram went through the delayer"
    assert tcp_kbit >= 20_000


def test_heal_after_the_node_was_replaced(make_lan: MakeLan) -> None:
    """Like a container restart: the handle's pid dies and the namespace's name is gone.
    The delayer alone keeps the old namespace alive; heal (and sweep) still end it."""
    lan = make_lan(2)
    sleeper = lan[1].ns.popen(["sleep", "600"])
    try:
        assert eventually(lambda: NetNS.from_pid(sleeper.pid).inode == lan[1].ns.inode)
        by_pid = NetNS.from_pid(sleeper.pid)
        handle = Shaper("nfqueue").apply(by_pid, delay_ms=50, loss=0.1)
        shadow = Shaper("nfqueue").apply(by_pid, delay_ms=10)
    finally:
        sleeper.kill()
        sleeper.wait()
    subprocess.run(["ip", "netns", "del", lan[1].ns.ref], check=True)
    assert not by_pid.exists()
    assert handle.delayer is not None and shadow.delayer is not None
    pids = [handle.delayer.pid, shadow.delayer.pid]
    handle.heal()
    handle.heal()
    assert gone(pids[0])
    report = sweep(by_pid)
    assert report.gone and report.delayers == [pids[1]]
    assert eventually(lambda: gone(pids[1]))
    shadow.heal()


def test_hold_mode_holds_old_connections_and_lets_new_ones_pass(make_lan: MakeLan) -> None:
    """Hold mode (the trigger of KAFKA-17754): a request on a connection opened before the
    window reaches the server only when the window ends; a connection opened during it, and
    UDP, pass at once. So a client that retries on a new connection is answered first."""
    lan = make_lan(2)
    lan.echo_servers()
    ping = lan.held_connection(lan[0], lan[1])

    assert ping(2) == "ok"  # the old connection works before the window
    hold_s = 10.0
    delayer = start_delayer(lan[1].ns, "kc-test-hold", 0.0, hold_ms=hold_s * 1000)
    t0 = time.monotonic()
    try:
        assert ping(1) == "timeout", "a request on the old connection is held"
        assert lan.tcp_works(lan[0], lan[1], timeout=2.0), "a new connection passes"
        assert lan.reaches(lan[0], lan[1]), "UDP passes"
        inside = time.monotonic() - t0
        assert inside < hold_s, f"the checks took {inside:.1f}s: they proved nothing held"
        # the held line (and the one sent now) are echoed once the window ends
        assert ping(hold_s + 10) == "ok"
        released = time.monotonic() - t0
        assert released >= hold_s - 0.5, released
        assert ping(2) == "ok", "and the old connection works normally afterwards"
    finally:
        stats = delayer.stop()
    assert stats["packets"] >= 2, stats
    assert lan.no_rules_left()
