"""Codec framing the real-broker test cannot produce: the Java client's xerial-framed
snappy (librdkafka writes raw snappy), several blocks long; and corrupt bodies."""

from __future__ import annotations

import struct

import cramjam

from checkers.segments import _XERIAL_MAGIC, _decompress

DATA = b"".join(b"record %05d " % i for i in range(4000))


def test_xerial_framed_snappy_of_several_blocks() -> None:
    blocks = [DATA[i : i + 32768] for i in range(0, len(DATA), 32768)]
    assert len(blocks) > 1
    body = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for blk in blocks:
        packed = bytes(cramjam.snappy.compress_raw(blk))
        body += struct.pack(">i", len(packed)) + packed
    assert _decompress(2, body) == DATA


def test_corrupt_bodies_are_not_decoded() -> None:
    for codec in (1, 2, 3, 4):
        assert _decompress(codec, b"\x00not a compressed body") is None, codec
    assert _decompress(7, DATA) is None  # an unknown codec
