"""The record value codec (unit)."""

from __future__ import annotations

import zlib

import pytest

from workloads.record import decode, encode, op_id


@pytest.mark.parametrize("producer,seq,size", [(0, 0, 100), (7, 123_456_789, 100),
                                               (2**31 - 1, 2**40 - 1, 64), (3, 5, 1000),
                                               (1, 2, 1)])
def test_round_trip(producer: int, seq: int, size: int) -> None:
    value = encode(producer, seq, size)
    assert decode(value) == (producer, seq, True)
    assert len(value) == max(size, len(encode(producer, seq, 1)))


def test_encoding_is_the_documented_text() -> None:
    # A known answer: the divergence checker compares raw bytes across brokers and runs, so
    # one identity must always encode to these bytes (CRC-32 of "<producer>|<seq>|<padding>").
    value = encode(4, 99, 30)
    assert value == b"KC1|4|99|e9e7085a|abcdefghijkl"
    assert int(value.split(b"|")[3], 16) == zlib.crc32(b"4|99|abcdefghijkl")
    assert len(encode(4, 99, 100)) == 100


def test_checksum_catches_every_single_byte_change() -> None:
    value = encode(12, 3456, 100)
    for i in range(len(value)):
        for flip in (0x01, 0x20):
            bad = bytearray(value)
            bad[i] ^= flip
            producer, seq, valid = decode(bytes(bad))
            assert not valid, f"change at byte {i} not caught"


def test_identity_swap_is_caught() -> None:
    # Same length, other identity, same padding: the checksum of the original no longer fits.
    value = encode(1, 22, 100)
    forged = value.replace(b"KC1|1|22|", b"KC1|1|23|", 1)
    assert decode(forged) == (1, 23, False)


@pytest.mark.parametrize("value", [None, b"", b"hello", b"KC1|", b"KC1|x|1|00000000|",
                                   b"KC1|1|2|3|", b"KC1|-1|2|00000000|pad"])
def test_garbage_does_not_decode(value: bytes | None) -> None:
    producer, seq, valid = decode(value)
    assert not valid
    assert producer is None and seq is None


def test_truncated_value_is_invalid() -> None:
    value = encode(5, 6, 100)
    assert decode(value[:-1])[2] is False


def test_op_ids_are_unique_across_producers() -> None:
    ids = {op_id(p, s) for p in range(4) for s in range(1000)}
    assert len(ids) == 4000
    assert op_id(1, 0) == 1 << 40
