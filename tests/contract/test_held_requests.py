"""What a hold fault records of the EndTxn requests it held (KAFKA-17754's evidence): the
parser of a held packet, the delayer's list, and the checker's reading of the end event."""

from __future__ import annotations

import struct

from checkers.known import held_end_txns
from contract.events import END, START, Event
from contract.held_requests import END_TXN_API_KEY, HELD_END_TXN, end_txn_request
from nemesis.net.delayer import Delayer
from nemesis.net.nfqueue import QueuedPacket


def _packet(payload: bytes, syn: bool = False, port: int = 40000) -> bytes:
    """IPv4 + TCP (20 bytes each) around ``payload``."""
    ip = bytes([0x45, 0]) + struct.pack("!H", 40 + len(payload)) + bytes(5) + bytes([6]) \
        + bytes(2) + bytes([10, 0, 0, 1, 10, 0, 0, 2])
    tcp = struct.pack("!HHIIBBHHH", port, 9092, 1, 0, 5 << 4, 0x02 if syn else 0x18, 0, 0, 0)
    return ip + tcp + payload


def _end_txn(version: int, txn_id: str = "kc-txn-0", pid: int = 4000, epoch: int = 3,
             commit: bool = True, corr: int = 7) -> bytes:
    client = b"rdkafka"
    head = struct.pack("!hhi", END_TXN_API_KEY, version, corr) + struct.pack("!h", len(client)) \
        + client
    raw = txn_id.encode()
    if version >= 3:  # header tagged fields, compact string, body tagged fields
        body = bytes([0, len(raw) + 1]) + raw + struct.pack("!qhb", pid, epoch, commit) + b"\0"
    else:
        body = struct.pack("!h", len(raw)) + raw + struct.pack("!qhb", pid, epoch, commit)
    msg = head + body
    return struct.pack("!i", len(msg)) + msg


def test_end_txn_requests_are_recognised_in_both_header_versions() -> None:
    for version in (1, 3):
        got = end_txn_request(_packet(_end_txn(version, commit=False)))
        assert got == {"transactional_id": "kc-txn-0", "producer_id": 4000, "epoch": 3,
                       "commit": False, "correlation_id": 7}, version


def test_other_packets_are_not_end_txn() -> None:
    produce = _end_txn(1)[:4] + struct.pack("!h", 0) + _end_txn(1)[6:]  # api key 0
    assert end_txn_request(_packet(produce)) is None
    assert end_txn_request(_packet(b"")) is None  # a bare ACK
    assert end_txn_request(_packet(_end_txn(1)[:20])) is None  # cut short
    assert end_txn_request(b"") is None


class _Queue:
    queue = 1

    def __init__(self, packets: list[bytes]) -> None:
        self.packets = [QueuedPacket(i, p) for i, p in enumerate(packets)]

    def receive(self) -> list[QueuedPacket]:
        out, self.packets = self.packets, []
        return out


def test_delayer_lists_the_end_txn_it_held_once() -> None:
    held = _packet(_end_txn(1))
    new_conn = [_packet(b"", syn=True, port=40001), _packet(_end_txn(1, "kc-txn-1"), port=40001)]
    d = Delayer(_Queue([held, held, *new_conn]), 0.0, 0.0, 1, hold_until=10.0)  # type: ignore[arg-type]
    d.take(now=1.0)
    # the retransmitted copy once; the retry on a connection opened in the hold is not held
    assert [r["transactional_id"] for r in d.held_end_txn] == ["kc-txn-0"]


def test_checker_reads_held_end_txn_with_its_window() -> None:
    s = 1_000_000_000
    events = [Event(12 * s, "hold", START, (1, 2), {"target": "all"}),
              Event(18 * s, "hold", END, (1, 2), {HELD_END_TXN: [
                  end_txn_request(_packet(_end_txn(1)))]}),
              Event(30 * s, "hold", START, (1, 2), {}),
              Event(36 * s, "hold", END, (1, 2), {HELD_END_TXN: []})]
    assert held_end_txns(events) == [("kc-txn-0", 12 * s, 18 * s)]


def test_hold_fault_names_what_its_delayers_held_in_its_end_event() -> None:
    from nemesis.faults.hold import Hold

    req = end_txn_request(_packet(_end_txn(1)))
    emitted: list[tuple[str, str, object, dict[str, object]]] = []

    class _Events:
        def emit(self, kind: str, phase: str, targets: object, detail: dict[str, object]) -> None:
            emitted.append((kind, phase, targets, detail))

    class _Delayer:
        def __init__(self, held: list[object]) -> None:
            self.held = held

        def stop(self) -> dict[str, object]:
            return {"packets": 3, HELD_END_TXN: self.held}

    class _Ctx:
        events = _Events()

    hold = Hold("all", 6.0)
    hold.targets = [1, 2]
    hold._delayers = [_Delayer([req]), _Delayer([req]), _Delayer([])]  # type: ignore[list-item]
    hold.stop(_Ctx())  # type: ignore[arg-type]
    assert emitted == [("hold", "end", [1, 2], {"target": "all", HELD_END_TXN: [req]})]
