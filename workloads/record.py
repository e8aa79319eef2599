"""The record value codec: every record carries who wrote it, its sequence number and a checksum.

A value is ASCII text, so it stays readable in broker logs and DumpLogSegments output::

    KC1|<producer>|<seq>|<crc32 as 8 hex digits>|<padding up to the record size>

The checksum is CRC-32 of ``<producer>|<seq>|<padding>``: any change to the identity or to
the padding makes ``decode`` report ``valid=False``. The padding is a deterministic function of
the size, so two encodings of one identity are byte-identical (the divergence checker compares
raw bytes only and never decodes).
"""

from __future__ import annotations

import zlib
from functools import lru_cache

MAGIC = b"KC1|"
_PAD_PATTERN = b"abcdefghijklmnopqrstuvwxyz0123456789"


@lru_cache(maxsize=64)
def _padding(n: int) -> bytes:
    if n <= 0:
        return b""
    reps = n // len(_PAD_PATTERN) + 1
    return (_PAD_PATTERN * reps)[:n]


def encode(producer: int, seq: int, size: int = 100) -> bytes:
    """The value of record ``seq`` of ``producer``, padded to ``size`` bytes.

    The value is longer than ``size`` only when the header alone does not fit (about 30 bytes).
    """
    ident = b"%d|%d|" % (producer, seq)
    head_len = len(MAGIC) + len(ident) + 9  # 8 hex digits and a separator
    pad = _padding(size - head_len)
    crc = zlib.crc32(pad, zlib.crc32(ident))
    return b"%s%s%08x|%s" % (MAGIC, ident, crc, pad)


def decode(value: bytes | None) -> tuple[int | None, int | None, bool]:
    """``(producer, seq, valid)`` of a value; ``(None, None, False)`` when it does not parse.

    When the header parses but the checksum does not match, the parsed (possibly corrupted)
    identity is returned with ``valid=False``.
    """
    if not value or not value.startswith(MAGIC):
        return None, None, False
    parts = value.split(b"|", 4)
    if len(parts) != 5:
        return None, None, False
    _, p_raw, s_raw, crc_raw, pad = parts
    # isdigit: int() alone would also take " 1", "+1" and "1_0".
    if len(crc_raw) != 8 or not (p_raw.isdigit() and s_raw.isdigit()):
        return None, None, False
    producer, seq = int(p_raw), int(s_raw)
    # Recompute over the exact bytes read and compare the exact checksum text (int(x, 16)
    # would take "A" for "a").
    ident = p_raw + b"|" + s_raw + b"|"
    ok = b"%08x" % zlib.crc32(pad, zlib.crc32(ident)) == crc_raw
    return producer, seq, ok


def op_id(producer: int, seq: int) -> int:
    """A write's op id, unique across producers: producer in the high bits, seq in the low 40."""
    return (producer << 40) | seq


# ---------------------------------------------------------------------- the identity header
#: Header that carries a record's identity when its value is the application's own format
#: (recorded clients, workloads/recording.py): ``<producer>|<seq>`` or
#: ``<producer>|<seq>|<crc32 of the value as 8 hex digits>``. With the checksum a changed
#: value reads as ``valid=False``; without it (an identity the application set itself) the
#: value is not checked.
IDENTITY_HEADER = "kc-id"


def identity_header(producer: int, seq: int, value: bytes | None) -> bytes:
    """The identity header's value for record ``seq`` of ``producer`` with this value."""
    return b"%d|%d|%08x" % (producer, seq, zlib.crc32(value or b""))


def parse_identity(raw: bytes | str) -> tuple[int, int, str | None] | None:
    """``(producer, seq, crc text or None)`` of a header value; None when it does not parse."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    parts = data.split(b"|")
    if len(parts) not in (2, 3) or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    crc = parts[2].decode("ascii", "replace") if len(parts) == 3 else None
    if crc is not None and len(crc) != 8:
        return None
    return int(parts[0]), int(parts[1]), crc


#: Header of a record an application derived from another (consume-transform-produce): the
#: source record's identity, ``<producer>|<seq>``, recorded as ``reads.src_producer`` /
#: ``reads.src_seq`` (the pipeline check, checkers/pipeline.py).
SOURCE_HEADER = "kc-src"


def source_of(headers: list[tuple[str, bytes | None]] | None) -> tuple[int | None, int | None]:
    """``(producer, seq)`` of the source header (the last one, if several), else Nones."""
    found = None
    for name, raw in headers or ():
        if name == SOURCE_HEADER and raw is not None:
            found = raw
    ident = parse_identity(found) if found is not None else None
    return (None, None) if ident is None else (ident[0], ident[1])


def decode_header(headers: list[tuple[str, bytes | None]] | None,
                  value: bytes | None) -> tuple[int | None, int | None, bool]:
    """``(producer, seq, valid)`` from the identity header (the last one, if several);
    ``(None, None, False)`` without one that parses."""
    found = None
    for name, raw in headers or ():
        if name == IDENTITY_HEADER and raw is not None:
            found = raw
    ident = parse_identity(found) if found is not None else None
    if ident is None:
        return None, None, False
    producer, seq, crc = ident
    return producer, seq, crc is None or crc == f"{zlib.crc32(value or b''):08x}"
