"""Segment parsing and replica comparison (pure Python, no Spark)."""

from __future__ import annotations

from checker_segments import batch, write_log

from checkers.divergence import check_divergence, compare_partition
from checkers.runfiles import RunDir
from checkers.segments import batch_records, iter_batches


def test_parse_batches_and_records() -> None:
    data = batch(0, [b"a", b"bb"], epoch=3) + batch(2, [b"ccc"]) + batch(3, [b"\x00\x00"],
                                                                         control=True)
    batches = list(iter_batches(data))
    assert [(b.base_offset, b.last_offset, b.leader_epoch) for b in batches] == [
        (0, 1, 3), (2, 2, 0), (3, 3, 0)]
    recs = [r for b in batches for r in batch_records(b)]
    assert [r.offset for r in recs] == [0, 1, 2, 3]
    assert [r.size for r in recs] == [1, 2, 3, 2]
    assert recs[3].control and not recs[0].control


def test_torn_tail_is_ignored() -> None:
    data = batch(0, [b"a"]) + batch(1, [b"b"])[:-3]
    assert [b.base_offset for b in iter_batches(data)] == [0]
    assert list(iter_batches(b"\x00" * 64)) == []


def _batches(*chunks: bytes):  # type: ignore[no-untyped-def]
    return list(iter_batches(b"".join(chunks)))


def test_identical_replicas_do_not_diverge() -> None:
    a = _batches(batch(0, [b"x", b"y"]), batch(2, [b"z"]))
    n, ex, compared = compare_partition("t", 0, {"broker-1": a, "broker-2": list(a)})
    assert (n, ex, compared) == (0, [], 3)


def test_divergent_offset_found_only_below_shorter_end() -> None:
    a = _batches(batch(0, [b"x", b"y"]), batch(2, [b"z"]), batch(3, [b"tail-a"]))
    b = _batches(batch(0, [b"x", b"Y"]), batch(2, [b"z"]))  # shorter, differs at offset 1
    n, ex, _ = compare_partition("t", 0, {"broker-1": a, "broker-2": b})
    assert n == 1
    assert ex[0]["offset"] == 1 and set(ex[0]["replicas"]) == {"broker-1", "broker-2"}


def test_different_batching_same_records_is_not_divergence() -> None:
    a = _batches(batch(0, [b"x", b"y"]))
    b = _batches(batch(0, [b"x"]), batch(1, [b"y"]))
    assert compare_partition("t", 0, {"1": a, "2": b})[0] == 0


def test_control_record_vs_data_record_diverges() -> None:
    a = _batches(batch(0, [b"x"]), batch(1, [b"\x00\x00\x00\x01"], control=True))
    b = _batches(batch(0, [b"x"]), batch(1, [b"\x00\x00\x00\x01"]))
    assert compare_partition("t", 0, {"1": a, "2": b})[0] == 1


def test_log_directory_layout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path)
    for rep in ("broker-1", "broker-2", "broker-3"):
        write_log(root, rep, "my-topic", 0, [batch(0, [b"a", b"b"])])
        write_log(root, rep, "my-topic", 0, [batch(2, [b"c" if rep != "broker-3" else b"C"])],
                  base=2)
        write_log(root, rep, "__consumer_offsets", 0, [batch(0, [rep.encode()])])
    res = check_divergence(RunDir(root), None)
    assert res.checked and res.count == 1 and res.partitions == 1
    assert res.examples[0]["topic"] == "my-topic" and res.examples[0]["offset"] == 2


def test_absent_log_directory_is_not_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = check_divergence(RunDir(str(tmp_path)), None)
    assert not res.checked and res.count == 0
