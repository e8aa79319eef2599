"""A client driver's stdout read a chunk at a time, its hot events parsed as columns.

A producer driver reports two events per record (``sent``, then ``ack``; contract/
driver_protocol.py). Parsed one by one in Python, their text lines held the Java driver to a
quarter of the rate of Kafka's own ProducerPerformance; parsed as text with NumPy, to half of
it (the recorder's share of two cores). So the drivers write these two as fixed-width binary
frames (``FRAME_SIZE`` bytes: a tag byte, three little-endian int64), read with
``numpy.frombuffer`` at about 0.1 µs a record, and every other event as its text line.
:func:`split_events` cuts a chunk into runs of frames and runs of text lines, and keeps a
torn trailing frame or line for the next chunk.

Text ``sent``/``ack`` lines stay valid; a run of text lines is scanned with NumPy
(:func:`pieces`): the lines are found by their newlines, told apart by their first byte
(``s`` is only ``sent``, ``a`` only ``ack``), and each run of hot lines between two other
lines becomes two integer arrays, parsed in one call. Every other line (and a hot line with
the wrong number of fields) is handed on as it is, in the driver's order: a run's records
are all sent before any later event is seen, so an ``error`` line always follows its
record's ``sent``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from contract.driver_protocol import FRAME_SIZE, FRAMES

_NL, _TAB, _MINUS = 10, 9, 45
_SENT, _ACK = ord("s"), ord("a")
#: A frame: its tag (:data:`SENT_TAG`: seq, partition, invoke_ns; :data:`ACK_TAG`: seq,
#: offset, complete_ns), then the three fields as little-endian int64.
SENT_TAG = next(t for t, k in FRAMES.items() if k == "sent")
ACK_TAG = next(t for t, k in FRAMES.items() if k == "ack")
_TAGS = bytes((SENT_TAG, ACK_TAG))
#: Frames looked at a time for the end of a run (a bounded look ahead per run).
_WINDOW = 1 << 14
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


def split_events(buf: bytes) -> tuple[list[HotRun | bytes], bytes]:
    """(the whole events of ``buf`` in order: a :class:`HotRun` per run of frames or of
    well-formed text hot lines, every other line as its bytes; the partial last frame or
    line after them, for the next chunk or, at the stream's end, a torn event)."""
    out: list[HotRun | bytes] = []
    a = np.frombuffer(buf, dtype=np.uint8)
    n, p = len(buf), 0
    while p < n:
        if buf[p] in _TAGS:
            k = _frames_at(a, p)
            if k == 0:  # a frame not whole yet
                break
            out.append(_frame_run(a, p, k))
            p += k * FRAME_SIZE
            continue
        # text up to the next frame (whose tag starts a line) or the last newline
        nxt = min((i for i in (buf.find(t, p) for t in _TAGS) if i >= 0), default=n)
        end = buf.rfind(b"\n", p, nxt) + 1
        if end <= p:  # no whole line before the next frame or the buffer's end
            if nxt == n:
                break
            end = nxt  # a line cut off by a frame (a corrupt stream): a bad line
        out.extend(pieces(buf[p:end]) if buf[end - 1] == _NL else [buf[p:end]])
        p = end
    return out, buf[p:]


def _frames_at(a: np.ndarray, p: int) -> int:
    """How many whole frames follow one another from ``p``."""
    k = 0
    while True:
        whole = min(_WINDOW, (len(a) - p) // FRAME_SIZE - k)
        if whole <= 0:
            return k
        at = p + k * FRAME_SIZE
        tags = a[at:at + whole * FRAME_SIZE:FRAME_SIZE]
        bad = np.flatnonzero((tags != SENT_TAG) & (tags != ACK_TAG))
        if bad.size:
            return k + int(bad[0])
        k += whole


def _frame_run(a: np.ndarray, p: int, k: int) -> HotRun:
    block = a[p:p + k * FRAME_SIZE].reshape(k, FRAME_SIZE)
    rows = np.ascontiguousarray(block[:, 1:]).view("<i8").astype(np.int64, copy=False)
    is_sent = block[:, 0] == SENT_TAG
    return HotRun(rows[is_sent], rows[~is_sent])


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
