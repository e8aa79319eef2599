"""A client driver's stdout read a chunk at a time, its hot lines parsed as columns.

A producer driver writes two lines per record (``sent``, then ``ack``; contract/
driver_protocol.py). Parsed one by one in Python, they held the Java driver to a quarter of
the rate of Kafka's own ProducerPerformance. Here a chunk of whole lines is
scanned with NumPy: the lines are found by their newlines, told apart by their first byte
(``s`` is only ``sent``, ``a`` only ``ack``), and each run of hot lines between two other
lines becomes two integer arrays, parsed in one call. Every other line (and a hot line
with the wrong number of fields) is handed on as it is, in the driver's order: a run's
records are all sent before any later line is seen, so an ``error`` line always follows its
record's ``sent``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

_NL, _TAB, _MINUS = 10, 9, 45
_SENT, _ACK = ord("s"), ord("a")
#: Tabs in a hot line: kind and three integer fields.
_HOT_TABS = 3


@dataclass(frozen=True)
class HotRun:
    """Consecutive ``sent`` and ``ack`` lines: ``sent`` rows (seq, partition, invoke_ns) and
    ``acks`` rows (seq, offset, complete_ns), each in the driver's order."""

    sent: np.ndarray
    acks: np.ndarray


def split_complete(buf: bytes) -> tuple[bytes, bytes]:
    """(the whole lines of ``buf``, the partial last line after them)."""
    end = buf.rfind(b"\n") + 1
    return buf[:end], buf[end:]


def _ints(data: bytes, prefix: bytes, lines: int) -> np.ndarray | None:
    """The three integers of each of ``lines`` lines that all start with ``prefix``; None
    when a field is no integer (a '-' inside one)."""
    text = data.replace(prefix, b"").replace(b"\n", b"\t")
    try:
        values = np.fromstring(text, dtype=np.int64, sep="\t")  # noqa: NPY201 - text mode
    except ValueError:
        return None
    if values.size != 3 * lines:
        return None
    return values.reshape(lines, 3)


def pieces(data: bytes) -> Iterator[HotRun | bytes]:
    """The lines of ``data`` (whole lines, each ending in a newline) in order: a
    :class:`HotRun` for each run of well-formed hot lines, every other line as its bytes
    (newline included)."""
    if not data:
        return
    a = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(a == _NL) + 1
    starts = np.concatenate(([0], ends[:-1]))
    first = a[starts]
    tabs = np.add.reduceat((a == _TAB).astype(np.int32), starts)
    # bytes other than digits, '-', tabs and the newline: a hot line's are its kind's letters
    other = np.add.reduceat((((a < 48) | (a > 57)) & (a != _MINUS) & (a != _TAB)
                             & (a != _NL)).astype(np.int32), starts)
    hot = (((first == _SENT) & (other == 4)) | ((first == _ACK) & (other == 3))) \
        & (tabs == _HOT_TABS)
    cold = np.flatnonzero(~hot)
    lo = 0
    for i in [*cold.tolist(), len(starts)]:
        if i > lo:
            run = _hot_run(a, starts[lo:i], ends[lo:i], first[lo:i])
            if run is None:  # a field that is no integer: each line on its own
                yield from (data[s:e] for s, e in zip(starts[lo:i].tolist(),
                                                      ends[lo:i].tolist(), strict=True))
            else:
                yield run
        if i < len(starts):
            yield data[int(starts[i]):int(ends[i])]
        lo = i + 1


def _hot_run(a: np.ndarray, starts: np.ndarray, ends: np.ndarray,
             first: np.ndarray) -> HotRun | None:
    lengths = ends - starts
    is_sent = first == _SENT
    span = a[int(starts[0]):int(ends[-1])]
    out = []
    for mask, prefix in ((is_sent, b"sent\t"), (~is_sent, b"ack\t")):
        n = int(mask.sum())
        if n == 0:
            out.append(np.empty((0, 3), dtype=np.int64))
            continue
        keep = np.repeat(mask, lengths)
        rows = _ints(span[keep].tobytes(), prefix, n)
        if rows is None:
            return None
        out.append(rows)
    return HotRun(out[0], out[1])
