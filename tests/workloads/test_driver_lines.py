"""A driver's stdout parsed a chunk at a time (workloads/driver_lines.py) and the column
recorder's run calls: hot lines become columns in the driver's order, every other line (a
malformed hot one too) is handed on alone, and a run of attempts must be dense."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from workloads.driver_lines import ACK_TAG, SENT_TAG, HotRun, pieces, split_complete, split_events
from workloads.write_columns import ColumnRecorder


def _shape(data: bytes) -> list[object]:
    return [(p.sent.tolist(), p.acks.tolist()) if isinstance(p, HotRun) else p
            for p in pieces(data)]


def test_hot_runs_and_other_lines_keep_the_drivers_order() -> None:
    data = (b"hello\tjava\t4.1.1\n"
            b"sent\t0\t0\t100\nsent\t1\t1\t101\nack\t0\t7\t150\n"
            b"error\t1\t160\tTimeoutException\n"
            b"sent\t2\t0\t170\nack\t2\t-1\t180\n"
            b"ack\t3\tx\t190\n"        # no integer: alone, for the line parser to refuse
            b"sent\t4\t1\n"            # a field short: alone
            b"end\n")
    assert _shape(data) == [
        b"hello\tjava\t4.1.1\n",
        ([[0, 0, 100], [1, 1, 101]], [[0, 7, 150]]),
        b"error\t1\t160\tTimeoutException\n",
        ([[2, 0, 170]], [[2, -1, 180]]),
        b"ack\t3\tx\t190\n", b"sent\t4\t1\n", b"end\n"]
    assert _shape(b"") == []


def test_only_whole_lines_are_parsed() -> None:
    assert split_complete(b"sent\t0\t0\t1\nack\t0\t5") == (b"sent\t0\t0\t1\n", b"ack\t0\t5")
    assert split_complete(b"ack\t0") == (b"", b"ack\t0")


def _frame(tag: int, a: int, b: int, c: int) -> bytes:
    return struct.pack("<Bqqq", tag, a, b, c)


STREAM = (b"hello\tgo\t1\n"
          + _frame(SENT_TAG, 0, 0, 100) + _frame(SENT_TAG, 1, 1, 101)
          + _frame(ACK_TAG, 0, 10, 150)      # bytes 10 (a newline) inside a frame
          + b"error\t1\t160\tTimeoutException\n"
          + _frame(ACK_TAG, 2, -1, 170)
          + b"sent\t5\t0\t9\n"              # a text hot line is still one
          + b"end\n")


def _events(chunks: list[bytes]) -> tuple[list[object], bytes]:
    """The events of the chunks read one after another, each run as its sent rows, then its
    acknowledgements (a run cut in two by a read is two runs)."""
    got: list[object] = []
    rest = b""
    for c in chunks:
        events, rest = split_events(rest + c)
        for e in events:
            got += ([("sent", r) for r in e.sent.tolist()] + [("ack", r) for r in e.acks.tolist()]
                    if isinstance(e, HotRun) else [e])
    return got, rest


def test_frames_and_lines_keep_the_drivers_order_wherever_a_read_cuts() -> None:
    torn = _frame(SENT_TAG, 3, 0, 1)[:7]
    whole, rest = _events([STREAM + torn])
    assert whole == [
        b"hello\tgo\t1\n", ("sent", [0, 0, 100]), ("sent", [1, 1, 101]), ("ack", [0, 10, 150]),
        b"error\t1\t160\tTimeoutException\n", ("ack", [2, -1, 170]), ("sent", [5, 0, 9]),
        b"end\n"]
    assert rest == torn  # a frame cut short waits for its rest (or is torn)
    for cut in range(len(STREAM) + 1):
        assert _events([STREAM[:cut], STREAM[cut:] + torn]) == (whole, torn), cut


def test_a_line_cut_off_by_a_frame_is_handed_on_alone() -> None:
    got, rest = _events([b"sent\t1" + _frame(ACK_TAG, 1, 2, 3) + b"end"])
    assert got == [b"sent\t1", ("ack", [1, 2, 3])] and rest == b"end"


def test_a_run_of_attempts_must_be_dense(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "history").mkdir()
    rec = ColumnRecorder(tmp_path, 1, "t")
    i64 = np.int64
    rec.invoked_many(np.array([0, 1, 2], i64), np.array([0, 1, 0], i64),
                     np.array([10, 11, 12], i64))
    with pytest.raises(ValueError, match="not dense: seq 4 where 3 was next"):
        rec.invoked_many(np.array([4], i64), np.array([0], i64), np.array([13], i64))
    with pytest.raises(ValueError, match="not dense"):
        rec.invoked_many(np.array([3, 5], i64), np.array([0, 0], i64), np.array([13, 14], i64))
    assert rec.next_seq == 3  # nothing of a refused run kept
    rec.acked_many(np.array([2, 0], i64), np.array([8, -1], i64), np.array([30, 31], i64))
    rec.refused_at(1, 32, "IllegalStateException")
    table = rec.take()
    assert table is not None
    got = {r["seq"]: r for r in table.to_pylist()}
    assert [(got[s]["outcome"], got[s]["offset"], got[s]["invoke_ns"], got[s]["complete_ns"],
             got[s]["partition"]) for s in (0, 1, 2)] == [
        ("ok", None, 10, 31, 0), ("fail", None, 11, 32, 1), ("ok", 8, 12, 30, 0)]
    assert got[1]["error"] == "IllegalStateException"
