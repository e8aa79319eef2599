"""Kafka places a transactional id (and a group) on the partition of its Java hashCode, made
non-negative, modulo the partition count: compose.admin.java_hash must be Java's."""

from __future__ import annotations

from compose.admin import java_abs, java_hash


def test_java_string_hash_code() -> None:
    # values of Java's String.hashCode, over UTF-16 code units (a surrogate pair is two)
    assert java_hash("") == 0 and java_hash("a") == 97
    assert java_hash("hello world") == 1794106052
    assert java_hash("\u00e9") == 233
    assert java_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_hash("polygenelubricants") == -2147483648  # wraps to Integer.MIN_VALUE
    assert java_abs(-2147483648) == 0 and java_abs(-5) == 5
