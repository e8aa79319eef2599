"""What a ``hold`` fault held: the EndTxn requests it found in the packets it held, as its
``end`` event names them (``detail.held_end_txn``), and the parser that finds them.

KAFKA-17754's evidence for one torn transaction is an EndTxn of the same producer held on a
stale connection and released into that transaction (checkers/known.py, fact
``end_txn_held``). The delayer (chaos/net/delayer.py, hold mode) sees packets, not requests:
it hands each held packet (IP header onwards, the first bytes the queue copies) to
:func:`end_txn_request`, which recognises a Kafka request that starts the TCP payload and is
an EndTxn (api key 26). A request that starts mid-segment (behind another in the same
segment) is not found: the evidence is then missing and the record stays untagged.

Dependency-free: the delayer runs it inside a node's namespace.
"""

from __future__ import annotations

import struct
from typing import Any

#: The end event's detail key: a list of :func:`end_txn_request` dicts (no repeats).
HELD_END_TXN = "held_end_txn"
#: How many bytes of each held packet the delayer needs (IP + TCP headers + an EndTxn).
HOLD_COPY_BYTES = 512
END_TXN_API_KEY = 26
_TCP = 6


def _tcp_payload(packet: bytes) -> bytes | None:
    if not packet:
        return None
    if packet[0] >> 4 == 4:
        ihl = (packet[0] & 0x0F) * 4
        if len(packet) < ihl + 20 or packet[9] != _TCP:
            return None
        start = ihl
    elif packet[0] >> 4 == 6:
        if len(packet) < 60 or packet[6] != _TCP:  # no extension headers: Kafka's TCP
            return None
        start = 40
    else:
        return None
    return packet[start + (packet[start + 12] >> 4) * 4:]


def _uvarint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 28:
            raise ValueError("uvarint too long")


def end_txn_request(packet: bytes) -> dict[str, Any] | None:
    """The EndTxn request whose header starts this TCP packet's payload, else None:
    ``{"transactional_id", "producer_id", "epoch", "commit", "correlation_id"}``.

    Request header v1 (EndTxn v0-v2) or v2 (v3+, flexible: tagged fields after the client
    id, a compact transactional id)."""
    payload = _tcp_payload(packet)
    if payload is None or len(payload) < 14:
        return None
    try:
        _size, api_key, version, correlation = struct.unpack_from("!ihhi", payload, 0)
        if api_key != END_TXN_API_KEY or not 0 <= version <= 10:
            return None
        (client_len,) = struct.unpack_from("!h", payload, 12)
        at = 14 + max(client_len, 0)
        flexible = version >= 3
        if flexible:  # header tagged fields
            count, at = _uvarint(payload, at)
            for _ in range(count):
                _tag, at = _uvarint(payload, at)
                size, at = _uvarint(payload, at)
                at += size
            n, at = _uvarint(payload, at)
            n -= 1
        else:
            (n,) = struct.unpack_from("!h", payload, at)
            at += 2
        if n < 0 or at + n + 11 > len(payload):
            return None
        txn_id = payload[at:at + n].decode("utf-8")
        producer_id, epoch, committed = struct.unpack_from("!qhb", payload, at + n)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None
    return {"transactional_id": txn_id, "producer_id": producer_id, "epoch": epoch,
            "commit": bool(committed), "correlation_id": correlation}


__all__ = ["END_TXN_API_KEY", "HELD_END_TXN", "HOLD_COPY_BYTES", "end_txn_request"]
