"""Test hosts on a private LAN: ``ip netns`` namespaces joined by veths to a bridge.

The bridge lives in a namespace of its own (the "switch"), so nothing is added to the host's
namespace: every address (10.231.0.0/24) exists only inside this run's namespaces, and all
test traffic stays there. Names are ``kc-test-<run id>-<role>``; teardown sweeps, kills every
process it started, deletes the namespaces, and fails the test if anything of ours is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from nemesis.net import iptables
from nemesis.net.netns import NetNS
from nemesis.net.partition import Node
from nemesis.net.sweep import delayer_pids, sweep

TRAFFIC = str(Path(__file__).with_name("traffic.py"))
SUBNET = "10.231.0"


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True, timeout=30)


@dataclass
class TestHost:
    """One namespace with one address on the test LAN."""

    name: str
    ns: NetNS
    ip: str

    def node(self) -> Node:
        """This host as a partition node."""
        return Node(self.name, (self.ip,), self.ns)


@dataclass
class Lan:
    """The hosts of one test, plus the processes started in them (killed at teardown)."""

    prefix: str
    hosts: list[TestHost]
    switch: str
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    agents: dict[str, tuple[subprocess.Popen[str], threading.Lock]] = field(default_factory=dict)

    def __getitem__(self, index: int) -> TestHost:
        return self.hosts[index]

    def nodes(self) -> list[Node]:
        """Every host as a partition node."""
        return [h.node() for h in self.hosts]

    def run(self, host: TestHost, *args: str, timeout: float = 60.0) -> dict:
        """Run a traffic client in ``host`` and return its JSON answer."""
        out = host.ns.run([sys.executable, TRAFFIC, *args], timeout=timeout)
        return json.loads(out.stdout)

    def spawn(self, host: TestHost, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
        """Start a traffic server/holder in ``host`` (killed at teardown)."""
        proc = host.ns.popen(
            [sys.executable, TRAFFIC, *args], stdout=subprocess.PIPE, text=True,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return proc

    @staticmethod
    def wait_ready(proc: subprocess.Popen[str]) -> None:
        """Block until ``proc`` printed READY."""
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "READY", f"{proc.args} did not start: {line!r}"

    def serve(self, host: TestHost, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
        """Start a traffic server/holder in ``host``; return once it printed READY."""
        proc = self.spawn(host, *args, stdin=stdin)
        self.wait_ready(proc)
        return proc

    def ping(self, src: TestHost, dst: TestHost, count: int = 5, interval: float = 0.01,
             wait: float = 0.5) -> dict:
        """UDP probes from src to dst's echo server (start it with :meth:`echo_servers`)."""
        return self.run(src, "udp-ping", dst.ip, "7007", "--count", str(count),
                        "--interval", str(interval), "--wait", str(wait))

    def probe(self, src: TestHost, ips: list[str], count: int = 3,
              wait: float = 0.3) -> dict[str, int]:
        """UDP probes from src (through its echo agent) to each ip: replies per ip."""
        proc, lock = self.agents[src.name]
        assert proc.stdin is not None and proc.stdout is not None
        with lock:
            proc.stdin.write(f"reach 7007 {count} {wait} {' '.join(ips)}\n")
            proc.stdin.flush()
            return dict(json.loads(proc.stdout.readline()))

    def reaches(self, src: TestHost, dst: TestHost) -> bool:
        """Whether any of a few UDP probes from src come back from dst."""
        return self.probe(src, [dst.ip])[dst.ip] > 0

    def datagrams(self, src: TestHost, dst: TestHost, count: int = 20, port: int = 7100) -> int:
        """How many of ``count`` datagrams src sends to dst arrive (one way only)."""
        return int(self.flood(src, dst, count, port)["received"])

    def flood(self, src: TestHost, dst: TestHost, count: int, port: int = 7100) -> dict:
        """src sends ``count`` datagrams to dst as fast as it can; dst's count and seconds
        from first to last arrival."""
        receiver = self.serve(dst, "udp-recv", str(port), "--wait", "0.3", stdin=True)
        assert receiver.stdin is not None and receiver.stdout is not None
        self.run(src, "udp-send", dst.ip, str(port), "--count", str(count))
        receiver.stdin.write("done\n")
        receiver.stdin.flush()
        return dict(json.loads(receiver.stdout.readline()))

    def held_connection(self, src: TestHost, dst: TestHost) -> Callable[[float], str]:
        """A TCP connection from src to dst's echo (:meth:`echo_servers`), opened now and held
        open. The function returned sends a line on it and says within its timeout whether
        the echo came: ``ok``, ``timeout`` or ``error``."""
        holder = self.serve(src, "tcp-hold", dst.ip, "7008", stdin=True)
        assert holder.stdin is not None and holder.stdout is not None
        stdin, stdout = holder.stdin, holder.stdout

        def ping(timeout: float) -> str:
            stdin.write(f"ping {timeout}\n")
            stdin.flush()
            return stdout.readline().strip()

        return ping

    def tcp_works(self, src: TestHost, dst: TestHost, timeout: float = 1.0) -> bool:
        """Whether src can open a TCP connection to dst's echo and get a line echoed."""
        return bool(self.run(src, "tcp-connect", dst.ip, "7008", "--timeout", str(timeout))["ok"])

    def reach_matrix(self) -> dict[tuple[str, str], bool]:
        """Round-trip reachability of every ordered pair of hosts: each host probes all the
        others at once, all hosts in parallel."""
        def probe(src: TestHost) -> dict[str, int]:
            return self.probe(src, [h.ip for h in self.hosts if h is not src])

        with ThreadPoolExecutor(len(self.hosts)) as pool:
            replies = list(pool.map(probe, self.hosts))
        by_ip = {h.ip: h.name for h in self.hosts}
        return {(src.name, by_ip[ip]): count > 0
                for src, got in zip(self.hosts, replies, strict=True) for ip, count in got.items()}

    def echo_servers(self) -> None:
        """A UDP echo (port 7007) and a TCP echo (port 7008) on every host."""
        procs = [self.spawn(host, "echo", "7007", "7008", stdin=True) for host in self.hosts]
        for host, proc in zip(self.hosts, procs, strict=True):
            self.wait_ready(proc)
            self.agents[host.name] = (proc, threading.Lock())

    def no_rules_left(self) -> bool:
        """True when no host has any kafka-chaos line in iptables-save."""
        return all(not iptables.ours_in_save(h.ns) for h in self.hosts)


def eventually(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` every 50 ms until it holds or ``timeout`` s pass; its last value."""
    retrying = Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(0.05),
                        retry=retry_if_result(lambda ok: not ok),
                        retry_error_callback=lambda _state: False)
    return bool(retrying(predicate))


def _teardown(lan: Lan, names: list[str]) -> list[str]:
    problems = []
    for proc in lan.procs:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
        if proc.stdin:
            proc.stdin.close()
    for host in lan.hosts:
        if host.ns.exists():
            report = sweep(host.ns)
            if report.anything_removed:
                problems.append(f"{host.name} had leftovers: {report.describe()}")
    for name in names:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
    left = [n for n in os.listdir("/run/netns") if n.startswith(lan.prefix)] \
        if os.path.isdir("/run/netns") else []
    if left:
        problems.append(f"namespaces left: {left}")
    stray = [pid for pid in delayer_pids() if lan.prefix in _cmdline(pid)]
    if stray:
        problems.append(f"delayer processes left: {stray}")
    return problems


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def make_lan() -> Iterator[Callable[[int], Lan]]:
    """``make_lan(n)`` builds n hosts 10.231.0.1..n on one bridge; all gone after the test."""
    run_id = uuid.uuid4().hex[:6]
    prefix = f"kc-test-{run_id}-"
    created: list[str] = []
    lans: list[Lan] = []

    def build(count: int) -> Lan:
        assert not lans, "one LAN per test"
        switch = f"{prefix}sw"
        _sh("ip", "netns", "add", switch)
        created.append(switch)
        _sh("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", switch, "link", "set", "br0", "up")
        hosts = []
        lan = Lan(prefix, hosts, switch)
        lans.append(lan)
        for i in range(count):
            name = f"{prefix}h{i}"
            _sh("ip", "netns", "add", name)
            created.append(name)
            _sh("ip", "-n", switch, "link", "add", f"h{i}", "type", "veth",
                "peer", "name", "eth0", "netns", name)
            _sh("ip", "-n", switch, "link", "set", f"h{i}", "master", "br0", "up")
            _sh("ip", "-n", name, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            _sh("ip", "-n", name, "link", "set", "eth0", "up")
            _sh("ip", "-n", name, "link", "set", "lo", "up")
            hosts.append(TestHost(f"h{i}", NetNS.named(name), f"{SUBNET}.{i + 1}"))
        return lan

    try:
        yield build
    finally:
        empty = Lan(prefix, [], "")
        problems = _teardown(lans[0] if lans else empty, created)
        assert not problems, problems
