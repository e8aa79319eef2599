"""Traffic tools run inside test namespaces (``ip netns exec NS python traffic.py ...``).

Servers print ``READY`` once listening, then serve until killed. Clients print one JSON
object. There is no ping binary on these machines, so ``udp-ping`` stands in for it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import socket
import struct
import sys
import threading
import time

PROBE = struct.Struct("!Id")


def udp_echo(port: int, announce: bool = True) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    if announce:
        print("READY", flush=True)
    while True:
        data, peer = sock.recvfrom(65536)
        sock.sendto(data, peer)


def udp_ping(host: str, port: int, count: int, interval: float, wait: float) -> dict:
    """Send ``count`` probes every ``interval`` s; a reply later than ``wait`` s is lost."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    rtts: dict[int, float] = {}
    order: list[int] = []
    send_errors = 0
    start = time.monotonic()
    seq = 0
    deadline = start + count * interval + wait
    while time.monotonic() < deadline:
        now = time.monotonic()
        if seq < count and now >= start + seq * interval:
            try:
                sock.sendto(PROBE.pack(seq, now), (host, port))
            except OSError:  # EPERM when an OUTPUT rule drops it: a lost probe
                send_errors += 1
            seq += 1
            continue
        next_send = start + seq * interval if seq < count else deadline
        ready, _, _ = select.select([sock], [], [], max(0.0, min(next_send, deadline) - now))
        while ready:
            try:
                data = sock.recv(64)
            except BlockingIOError:
                break
            got_seq, sent = PROBE.unpack(data[: PROBE.size])
            rtt = time.monotonic() - sent
            if rtt <= wait:
                rtts[got_seq] = rtt * 1000.0
                order.append(got_seq)
        if seq >= count and len(rtts) == count:
            break
    return {"sent": count, "received": len(rtts), "send_errors": send_errors,
            "rtts_ms": [rtts[k] for k in sorted(rtts)], "arrival_order": order}


def udp_recv(port: int, wait: float) -> None:
    """Count datagrams; once stdin says ``done`` (the sender finished), stop when none came
    for ``wait`` s. Print the count and the seconds from first to last arrival."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: we are root
    sock.bind(("0.0.0.0", port))
    sock.settimeout(0.05)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), done.set()), daemon=True).start()
    print("READY", flush=True)
    count = 0
    first = last = quiet_since = time.monotonic()
    while not (done.is_set() and time.monotonic() - quiet_since >= wait):
        try:
            sock.recv(2048)
        except TimeoutError:
            continue
        last = quiet_since = time.monotonic()
        if not count:
            first = last
        count += 1
    print(json.dumps({"received": count, "seconds": last - first}), flush=True)


def udp_send(host: str, port: int, count: int) -> dict:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    errors = 0
    for seq in range(count):
        try:
            sock.sendto(PROBE.pack(seq, time.monotonic()), (host, port))
        except OSError:
            errors += 1
    return {"sent": count, "send_errors": errors}


def udp_reach(hosts: list[str], port: int, count: int, wait: float) -> dict:
    """Probe every host at once from one socket; how many replies came from each."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got = {host: 0 for host in hosts}
    for seq in range(count):
        for host in hosts:
            with contextlib.suppress(OSError):
                sock.sendto(PROBE.pack(seq, time.monotonic()), (host, port))
    end = time.monotonic() + wait
    while (left := end - time.monotonic()) > 0 and not all(got.values()):
        ready, _, _ = select.select([sock], [], [], left)
        if ready:
            _, (peer, _) = sock.recvfrom(64)
            if peer in got:
                got[peer] += 1
    return got


def echo(udp_port: int, tcp_port: int) -> None:
    """UDP and TCP echo in one process, which also answers ``reach PORT COUNT WAIT IP...``
    lines on stdin with udp-reach's JSON (no process start per probe: on a busy host that
    start costs more than the probe)."""
    threading.Thread(target=udp_echo, args=(udp_port, False), daemon=True).start()
    threading.Thread(target=tcp_echo, args=(tcp_port, False), daemon=True).start()
    print("READY", flush=True)
    for line in sys.stdin:
        _, port, count, wait, *hosts = line.split()
        print(json.dumps(udp_reach(hosts, int(port), int(count), float(wait))), flush=True)
    threading.Event().wait()


def _echo_conn(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)


def tcp_echo(port: int, announce: bool = True) -> None:
    srv = socket.create_server(("0.0.0.0", port), reuse_port=True)
    if announce:
        print("READY", flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=_echo_conn, args=(conn,), daemon=True).start()


def tcp_connect(host: str, port: int, timeout: float) -> dict:
    """Connect, send a line, expect it echoed back, all within ``timeout``."""
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.sendall(b"hello\n")
            got = b""
            while len(got) < 6:
                chunk = conn.recv(64)
                if not chunk:
                    break
                got += chunk
        return {"ok": got == b"hello\n", "error": None, "seconds": time.monotonic() - start}
    except OSError as exc:
        return {"ok": False, "error": type(exc).__name__, "seconds": time.monotonic() - start}


def tcp_hold(host: str, port: int) -> None:
    """Hold one connection open; for each stdin line ``ping T`` echo a line within T s and
    print ``ok``/``timeout``/``error``."""
    conn = socket.create_connection((host, port), timeout=5)
    print("READY", flush=True)
    for line in sys.stdin:
        conn.settimeout(float(line.split()[1]))
        try:
            conn.sendall(b"x\n")
            got = conn.recv(64)
            print("ok" if got else "error", flush=True)
        except TimeoutError:
            print("timeout", flush=True)
        except OSError:
            print("error", flush=True)


def _rx_bytes() -> int:
    """Bytes this network namespace's interfaces (but loopback) have received: the kernel
    counts a frame when it arrives, whether or not the reader was scheduled to take it."""
    with open("/proc/self/net/dev") as fh:
        lines = fh.read().splitlines()[2:]
    return sum(int(data.split()[0]) for name, data in (line.split(":", 1) for line in lines)
               if name.strip() != "lo")


def tcp_sink(port: int, skip: float = 0.3) -> None:
    """Accept one connection, read to EOF, print the rate after the first ``skip`` s (the
    shaper's initial burst passes at line rate): bytes and seconds of that steady part.

    The bytes are the interface's received-bytes counter (frames, headers included), read
    with the clock at each read: a pair is consistent even when the reader ran late (on a
    busy host a late read returns a buffer full of earlier bytes, which counted against the
    reader's own clock made the link look up to ~20 % faster than its limit)."""
    srv = socket.create_server(("0.0.0.0", port), reuse_port=True)
    print("READY", flush=True)
    conn, _ = srv.accept()
    total = 0
    start: float | None = None
    steady: tuple[float, int] | None = None  # (time, rx bytes) where the steady part starts
    last = (time.monotonic(), _rx_bytes())
    with conn:
        while data := conn.recv(1 << 16):
            last = (time.monotonic(), _rx_bytes())
            if start is None:
                start = last[0]
            elif steady is None and last[0] - start >= skip:
                steady = last
            total += len(data)
    steady = steady or last
    print(json.dumps({"bytes": last[1] - steady[1], "seconds": last[0] - steady[0],
                      "total": total}), flush=True)


def tcp_blast(host: str, port: int, seconds: float) -> dict:
    """Send as fast as the network takes it for ``seconds``."""
    payload = b"\0" * (1 << 16)
    sent = 0
    with socket.create_connection((host, port), timeout=10) as conn:
        # a small send buffer: what is queued after the deadline drains quickly at low rates
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sent += conn.send(payload)
    return {"sent": sent}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("udp-echo", "tcp-echo", "tcp-sink"):
        sub.add_parser(name).add_argument("port", type=int)
    ping = sub.add_parser("udp-ping")
    ping.add_argument("host")
    ping.add_argument("port", type=int)
    ping.add_argument("--count", type=int, default=10)
    ping.add_argument("--interval", type=float, default=0.01)
    ping.add_argument("--wait", type=float, default=1.0)
    both = sub.add_parser("echo")
    both.add_argument("udp_port", type=int)
    both.add_argument("tcp_port", type=int)
    reach = sub.add_parser("udp-reach")
    reach.add_argument("port", type=int)
    reach.add_argument("hosts", nargs="+")
    reach.add_argument("--count", type=int, default=3)
    reach.add_argument("--wait", type=float, default=0.3)
    recv = sub.add_parser("udp-recv")
    recv.add_argument("port", type=int)
    recv.add_argument("--wait", type=float, default=0.5)
    for name in ("tcp-connect", "tcp-hold", "tcp-blast", "udp-send"):
        client = sub.add_parser(name)
        client.add_argument("host")
        client.add_argument("port", type=int)
        client.add_argument("--timeout", type=float, default=2.0)
        client.add_argument("--seconds", type=float, default=2.0)
        client.add_argument("--count", type=int, default=10)
    args = parser.parse_args()
    if args.cmd in ("echo", "udp-echo", "udp-ping", "udp-reach"):
        # they measure time: on a busy host an ordinary process wakes tens of ms late and
        # that would count as network delay. They sleep between packets, so RR is harmless.
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    if args.cmd == "udp-echo":
        udp_echo(args.port)
    elif args.cmd == "tcp-echo":
        tcp_echo(args.port)
    elif args.cmd == "tcp-sink":
        tcp_sink(args.port)
    elif args.cmd == "tcp-hold":
        tcp_hold(args.host, args.port)
    elif args.cmd == "udp-ping":
        print(json.dumps(udp_ping(args.host, args.port, args.count, args.interval, args.wait)))
    elif args.cmd == "tcp-connect":
        print(json.dumps(tcp_connect(args.host, args.port, args.timeout)))
    elif args.cmd == "echo":
        echo(args.udp_port, args.tcp_port)
    elif args.cmd == "udp-reach":
        print(json.dumps(udp_reach(args.hosts, args.port, args.count, args.wait)))
    elif args.cmd == "udp-recv":
        udp_recv(args.port, args.wait)
    elif args.cmd == "udp-send":
        print(json.dumps(udp_send(args.host, args.port, args.count)))
    elif args.cmd == "tcp-blast":
        print(json.dumps(tcp_blast(args.host, args.port, args.seconds)))


if __name__ == "__main__":
    main()
