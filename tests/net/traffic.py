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


# Linux's SO_TIMESTAMPNS (asm-generic, 64-bit: struct timespec of two longs); the socket
# module does not name it.
SO_TIMESTAMPNS = 35
STAMP = struct.Struct("@qq")


def _arrival(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's receive time (seconds, CLOCK_REALTIME) of the last segment a TCP read
    returned, from the read's SO_TIMESTAMPNS control message."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= STAMP.size:
            sec, nsec = STAMP.unpack(data[:STAMP.size])
            return sec + nsec / 1e9
    return None


def _slope(points: list[tuple[float, int]]) -> float:
    """Least-squares bytes per second through (arrival, bytes so far) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mb = sum(b for _, b in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (b - mb) for t, b in points) / var if var else 0.0


def tcp_sink(port: int, skip: float = 0.3) -> None:
    """Accept one connection, read to EOF, print the rate after the first ``skip`` s (the
    shaper's initial burst passes at line rate): the least-squares slope of bytes received
    against arrival time over that steady part (``bytes_per_s``; its bytes and seconds for
    the record).

    Times are the kernel's arrival stamps of the data each read returns, not the reader's
    clock: on a busy host a reader runs late, and a late read at the start (a buffer full
    of earlier bytes) made the link look up to ~35 % faster than its limit, a late last
    read up to ~30 % slower (suite failures under load). A slope, not the two ends: a
    shaper releases a sender's 64 KiB segments whole (at 4000 kbit/s one every ~136 ms),
    and a segment split over two reads at either end moved a two-point rate by ~10 %.
    The bytes are TCP payload: ~4.5 % below the frames a shaper counts."""
    srv = socket.create_server(("0.0.0.0", port), reuse_port=True)
    srv.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # the accepted socket inherits it
    # A receive window a late reader does not fill (SO_RCVBUFFORCE: we are root): TCP's
    # autotuned one starts at 128 KiB, a quarter second at 4000 kbit/s, and a full window
    # idles the link for real, which is not the limit's doing.
    srv.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
    print("READY", flush=True)
    conn, _ = srv.accept()
    # One read takes all that has arrived (more than the receive buffer), so a read's
    # stamp and the bytes so far match: the kernel merges queued segments and keeps the
    # newest one's stamp, which for part of a merged segment would be too late.
    buf = bytearray(32 << 20)
    total = 0
    points: list[tuple[float, int]] = []  # (arrival, bytes so far) after each read
    with conn:
        while True:
            n, ancillary, _, _ = conn.recvmsg_into([buf], socket.CMSG_SPACE(STAMP.size))
            if not n:
                break
            total += n
            stamp = _arrival(ancillary)
            if stamp is None:
                raise SystemExit("tcp-sink: a read without the kernel's arrival stamp")
            points.append((stamp, total))
    # Not the last read: if the reader was late for it, the connection's end (a FIN,
    # merged into the queued data) lends it its later stamp.
    steady = [p for p in points[:-1] if p[0] - points[0][0] >= skip]
    begin, end = (steady[0], steady[-1]) if steady else ((0.0, 0), (0.0, 0))
    print(json.dumps({"bytes_per_s": _slope(steady), "bytes": end[1] - begin[1],
                      "seconds": end[0] - begin[0], "total": total}), flush=True)


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
