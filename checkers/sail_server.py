"""Sail's Spark Connect server in a network namespace of its own, reached through a Unix
socket only its owner can open (run as a script by checkers/engines.py, not imported).

Spark Connect has no authentication: whoever reaches the server's port runs queries — reads
and writes files — as the user who started it. On 127.0.0.1 every local user reaches it. So
the server listens on the loopback of a fresh network namespace (``unshare -n``, or ``-rn``
for a user without the privilege) that nothing else shares, and this process relays a Unix
socket inside the caller's private scratch directory (mode 0700, the socket 0600) to it.

Protocol with the parent: argv[1] is the socket's path; one line ``ready`` on stdout once it
listens; the parent holds our stdin open for as long as it lives — at EOF (the parent ended
in any way, SIGKILL included) this process exits, and the server's threads with it.

Only the standard library and pysail: it runs by path, before anything of ours is importable.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import struct
import sys
import threading

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Brings up ``lo`` of this (new) namespace: it starts down, and with it 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(1 << 16):
            dst.sendall(data)
    except OSError:
        pass
    finally:  # the other direction may still be talking: close only ours
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _relay(client: socket.socket, port: int) -> None:
    try:
        upstream = socket.create_connection(("127.0.0.1", port))
    except OSError:
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _exit_with_parent() -> None:
    sys.stdin.buffer.read()  # returns at EOF: the parent is gone (or let us go)
    os._exit(0)


def main(sock_path: str) -> None:
    loopback_up()
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start()
    port = server.listening_address[1]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is born 0600, never briefly open to others
    try:
        listener.bind(sock_path)
    finally:
        os.umask(old)
    listener.listen(64)
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    print("ready", flush=True)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client, port), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1])
