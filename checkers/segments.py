"""A reader for Kafka log segment files (record batch format v2, magic 2).

Only what divergence needs: batch headers (to skip identical batches fast) and, for batches
that differ, each record's offset and a hash of its key and value. Control batches
(transaction markers) are records too.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import cramjam

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = BATCH_HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength precede the part batchLength counts

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16  # magic (8), version (4), compatible version (4)
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20


@dataclass(frozen=True)
class Batch:
    """One record batch as stored in a segment."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    data: bytes  # the whole batch, header included

    @property
    def signature(self) -> tuple[int, int, int, int]:
        """Equal signatures mean equal batches (the CRC covers attributes..records)."""
        return (self.base_offset, self.last_offset, self.crc, self.magic)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG)


def iter_batches(data: bytes) -> Iterator[Batch]:
    """Batches of one segment file; stops at a torn or zero-filled tail."""
    pos, size = 0, len(data)
    while pos + LOG_OVERHEAD <= size:
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + LOG_OVERHEAD + length
        if length <= 0 or end > size:
            return
        magic = data[pos + 16] if pos + 17 <= size else -1
        if magic == 2 and length + LOG_OVERHEAD >= HEADER_SIZE:
            (_, _, epoch, magic, crc, attrs, last_delta, *_rest) = BATCH_HEADER.unpack_from(
                data, pos
            )
            yield Batch(base, base + last_delta, epoch, magic, crc, attrs, data[pos:end])
        else:
            # Old message formats hold one (possibly wrapped) message: compare it whole.
            crc = struct.unpack_from(">I", data, pos + 12)[0] if pos + 16 <= end else 0
            yield Batch(base, base, -1, int(magic), crc, 0, data[pos:end])
        pos = end


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's varint/varlong) and the position after it."""
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def _snappy(body: bytes) -> bytes:
    """Kafka's snappy: the Java client writes xerial framing (magic, version, compatible
    version, then length-prefixed raw blocks); librdkafka writes one raw block."""
    if not body.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(body))
    out, pos = bytearray(), _XERIAL_HEADER
    while pos + 4 <= len(body):
        (n,) = struct.unpack_from(">i", body, pos)
        pos += 4
        out += bytes(cramjam.snappy.decompress_raw(body[pos : pos + n]))
        pos += n
    return bytes(out)


def _decompress(codec: int, body: bytes) -> bytes | None:
    """The records of a batch body; None when the codec is unknown or the body corrupt."""
    try:
        if codec == COMPRESSION_NONE:
            return body
        if codec == COMPRESSION_GZIP:
            return gzip.decompress(body)
        if codec == COMPRESSION_SNAPPY:
            return _snappy(body)
        if codec == COMPRESSION_LZ4:  # the LZ4 frame format (magic 2 batches)
            return bytes(cramjam.lz4.decompress(body))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(body))
    except (OSError, EOFError, ValueError, zlib.error, cramjam.DecompressionError,
            struct.error):
        return None
    return None


@dataclass(frozen=True)
class Record:
    offset: int
    digest: str  # hash of control flag, key and value
    size: int  # value length (-1 null)
    control: bool
    value_prefix: str  # first bytes of the value, hex


def _digest(control: bool, key: bytes | None, value: bytes | None) -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(b"c" if control else b"d")
    for part in (key, value):
        if part is None:
            h.update(b"\xff")
        else:
            h.update(len(part).to_bytes(4, "big"))
            h.update(part)
    return h.hexdigest()


def batch_records(batch: Batch) -> list[Record]:
    """The records of a batch; a batch that cannot be decoded yields one record per offset
    whose digest is the batch's CRC (equal batches still compare equal)."""
    if batch.magic != 2:
        return [Record(batch.base_offset, hashlib.blake2b(batch.data[12:], digest_size=12)
                       .hexdigest(), len(batch.data), False, "")]
    control = batch.is_control
    body = _decompress(batch.attributes & 0x07, batch.data[HEADER_SIZE:])
    count = struct.unpack_from(">i", batch.data, HEADER_SIZE - 4)[0]
    if body is None:
        return [Record(o, f"crc:{batch.crc:08x}:{o - batch.base_offset}", -1, control, "")
                for o in range(batch.base_offset, batch.last_offset + 1)]
    out: list[Record] = []
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(body, pos)
            end = pos + length
            pos += 1  # record attributes
            _ts, pos = _varint(body, pos)
            delta, pos = _varint(body, pos)
            klen, pos = _varint(body, pos)
            key = None if klen < 0 else body[pos : pos + klen]
            pos += max(klen, 0)
            vlen, pos = _varint(body, pos)
            value = None if vlen < 0 else body[pos : pos + vlen]
            pos = end  # headers are not compared
            out.append(Record(batch.base_offset + delta, _digest(control, key, value), vlen,
                              control, (value or b"")[:16].hex()))
    except (IndexError, struct.error):
        pass  # a corrupt batch keeps the records decoded so far
    return out
