"""A minimal nfnetlink_queue client in pure Python (no libnetfilter_queue).

The kernel hands packets that hit ``-j NFQUEUE --queue-num N`` to the netlink socket bound to
queue N in the same network namespace, and holds each until that socket sends a verdict.

Wire format (``linux/netlink.h``, ``linux/netfilter/nfnetlink.h``,
``linux/netfilter/nfnetlink_queue.h``): every message is a ``nlmsghdr`` (host byte order),
an ``nfgenmsg`` (family, version, resource id = queue number in network order), then
attributes (``nlattr``: length and type in host order, payload in network order, padded to
4 bytes). Message types are ``(NFNL_SUBSYS_QUEUE << 8) | msg``.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
SO_RCVBUFFORCE = 33

NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4

NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3

NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
NFQNL_COPY_PACKET = 2

NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_PAYLOAD = 10
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQA_CFG_MASK = 4
NFQA_CFG_FLAGS = 5

NFQA_CFG_F_FAIL_OPEN = 0x1  # queue full or socket overrun: accept instead of drop
NFQA_CFG_F_GSO = 0x4  # hand us GSO super-packets whole: far fewer verdicts per byte

NF_DROP = 0
NF_ACCEPT = 1

_NLMSGHDR = struct.Struct("=IHHII")
_NFGENMSG = struct.Struct("=BBH")
_NLATTR = struct.Struct("=HH")
_PACKET_HDR = struct.Struct("!IHB")
_HEADER_LEN = _NLMSGHDR.size + _NFGENMSG.size
_PACKET_TYPE = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET


def _attr(kind: int, payload: bytes) -> bytes:
    length = _NLATTR.size + len(payload)
    return _NLATTR.pack(length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def _message(msg: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    length = _HEADER_LEN + len(attrs)
    head = _NLMSGHDR.pack(length, (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0)
    return head + _NFGENMSG.pack(socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs


@dataclass(frozen=True)
class QueuedPacket:
    """A packet the kernel holds for us: its id and the first bytes of its IP header."""

    packet_id: int
    head: bytes


class NfQueue:
    """A socket bound to one NFQUEUE number in the current network namespace."""

    def __init__(self, queue: int, *, copy_range: int = 64, max_len: int = 65536,
                 rcvbuf: int = 64 << 20) -> None:
        self.queue = queue
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self._seq = 0
        try:
            self.sock.bind((0, 0))
            # a big receive buffer absorbs bursts; SO_RCVBUFFORCE ignores rmem_max (we are root)
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
            self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
            self._configure(_attr(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, 0)))
            self._configure(_attr(NFQA_CFG_PARAMS, struct.pack("!IB", copy_range,
                                                                NFQNL_COPY_PACKET)))
            self._configure(_attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", max_len)))
            flags = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO
            self._configure(_attr(NFQA_CFG_FLAGS, struct.pack("!I", flags))
                            + _attr(NFQA_CFG_MASK, struct.pack("!I", flags)))
        except BaseException:
            self.sock.close()
            raise
        self.sock.setblocking(False)
        self._buf = bytearray(1 << 16)

    def fileno(self) -> int:
        """The socket's fd, for poll()."""
        return self.sock.fileno()

    def _configure(self, attrs: bytes) -> None:
        """Send one config message and wait for its ack (raises OSError with the errno)."""
        self._seq += 1
        self.sock.send(_message(NFQNL_MSG_CONFIG, self.queue, attrs,
                                NLM_F_REQUEST | NLM_F_ACK, self._seq))
        while True:
            data = self.sock.recv(65536)
            for kind, _seq, body in _split(data):
                if kind == NLMSG_ERROR:
                    (code,) = struct.unpack_from("=i", body)
                    if code:
                        raise OSError(-code, f"nfqueue config of queue {self.queue}: "
                                             f"{os.strerror(-code)}")
                    return

    def receive(self, limit: int = 512) -> list[QueuedPacket]:
        """Every packet waiting on the socket now (up to ``limit``), without blocking."""
        packets: list[QueuedPacket] = []
        buf = self._buf
        recv_into = self.sock.recv_into
        unpack_head = _NLMSGHDR.unpack_from
        while len(packets) < limit:
            try:
                size = recv_into(buf)
            except BlockingIOError:
                break
            except OSError as exc:  # ENOBUFS is off, but be safe: lost packets fail open
                if exc.errno == errno.ENOBUFS:
                    continue
                raise
            offset = 0
            # the kernel sends one packet per datagram; the loop is for safety
            while offset + _NLMSGHDR.size <= size:
                length, kind = unpack_head(buf, offset)[:2]
                if length < _NLMSGHDR.size:
                    break
                if kind == _PACKET_TYPE:
                    packet = _parse_packet(memoryview(buf)[offset + _NLMSGHDR.size:
                                                          offset + length])
                    if packet is not None:
                        packets.append(packet)
                offset += (length + 3) & ~3
        return packets

    def verdicts(self, packet_ids: Iterable[int], verdict: int = NF_ACCEPT) -> None:
        """Send a verdict for each id, many messages per send() (netlink handles a batch)."""
        chunk: list[bytes] = []
        for packet_id in packet_ids:
            chunk.append(_message(NFQNL_MSG_VERDICT, self.queue,
                                  _attr(NFQA_VERDICT_HDR, struct.pack("!II", verdict, packet_id))))
            if len(chunk) == 1024:
                self._send_all(b"".join(chunk))
                chunk = []
        if chunk:
            self._send_all(b"".join(chunk))

    def verdict_upto(self, packet_id: int, verdict: int = NF_ACCEPT) -> None:
        """One verdict for every held packet whose id is <= ``packet_id`` (ids grow in queue
        order, so this releases a FIFO prefix with a single message)."""
        self._send_all(_message(NFQNL_MSG_VERDICT_BATCH, self.queue,
                                _attr(NFQA_VERDICT_HDR, struct.pack("!II", verdict, packet_id))))

    def _send_all(self, data: bytes) -> None:
        while True:
            try:
                self.sock.send(data)
                return
            except BlockingIOError:
                continue  # netlink sends to the kernel do not really block; retry at once

    def close(self) -> None:
        """Unbind and close. Packets still held are dropped by the kernel: verdict them first."""
        try:
            self.sock.setblocking(True)
            self.sock.send(_message(NFQNL_MSG_CONFIG, self.queue, _attr(
                NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_UNBIND, 0, 0))))
        except OSError:
            pass
        self.sock.close()


def _split(data: bytes | memoryview) -> list[tuple[int, int, memoryview]]:
    """Split a netlink datagram into (type, seq, body after the nlmsghdr)."""
    view = memoryview(data)
    out = []
    offset = 0
    while offset + _NLMSGHDR.size <= len(view):
        length, kind, _flags, seq, _pid = _NLMSGHDR.unpack_from(view, offset)
        if length < _NLMSGHDR.size:
            break
        out.append((kind, seq, view[offset + _NLMSGHDR.size: offset + length]))
        offset += (length + 3) & ~3
    return out


def _parse_packet(body: memoryview) -> QueuedPacket | None:
    offset = _NFGENMSG.size
    packet_id: int | None = None
    head = b""
    while offset + _NLATTR.size <= len(body):
        length, kind = _NLATTR.unpack_from(body, offset)
        if length < _NLATTR.size:
            break
        kind &= 0x3FFF  # strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
        if kind == NFQA_PACKET_HDR:
            packet_id = _PACKET_HDR.unpack_from(body, offset + _NLATTR.size)[0]
        elif kind == NFQA_PAYLOAD:
            head = bytes(body[offset + _NLATTR.size: offset + length])
        offset += (length + 3) & ~3
    return None if packet_id is None else QueuedPacket(packet_id, head)


def flow_key(head: bytes) -> bytes:
    """Protocol, addresses and ports of an IP packet: packets of one flow share a key."""
    if not head:
        return b""
    if head[0] >> 4 == 4:
        ihl = (head[0] & 0x0F) * 4
        return head[9:10] + head[12:20] + head[ihl: ihl + 4]
    return head[6:7] + head[8:40] + head[40:44]


TCP = 6
_SYN, _ACK = 0x02, 0x10


def tcp_opening(head: bytes) -> bool | None:
    """For a TCP packet, whether it opens a connection (SYN without ACK); None for anything
    that is not TCP (or too short to tell)."""
    if not head:
        return None
    if head[0] >> 4 == 4:
        proto, start = head[9], (head[0] & 0x0F) * 4
    else:
        proto, start = head[6], 40  # no extension headers: what Kafka's TCP sends
    if proto != TCP or len(head) < start + 14:
        return None
    flags = head[start + 13]
    return bool(flags & _SYN) and not flags & _ACK
