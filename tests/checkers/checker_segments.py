"""A tiny Kafka log segment writer (record batch v2) for divergence tests."""

from __future__ import annotations

import os
import struct

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def record(offset_delta: int, value: bytes | None, key: bytes | None = None) -> bytes:
    body = b"\x00" + varint(0) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(0)  # no headers
    return varint(len(body)) + body


def batch(base_offset: int, values: list[bytes], epoch: int = 0, control: bool = False,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    attrs = 0x20 | 0x10 if control else 0
    records = b"".join(record(i, v) for i, v in enumerate(values))
    after_crc = struct.pack(">hiqqqhii", attrs, len(values) - 1, 0, 0, producer_id,
                            producer_epoch, base_sequence, len(values)) + records
    crc = crc32c(after_crc)
    rest = struct.pack(">ibI", epoch, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(rest)) + rest


def write_log(root: str, replica: str, topic: str, partition: int,
              batches: list[bytes], base: int = 0) -> str:
    d = os.path.join(root, "logs", "data", replica, f"{topic}-{partition}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{base:020d}.log")
    with open(path, "ab") as fh:
        for b in batches:
            fh.write(b)
    return path
