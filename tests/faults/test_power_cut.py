"""The power loss's cut of a Kafka log dir, on files (no cluster): whole batches below the
recovery point stay, segments created after it go, only the run's topic on a cluster we did
not start, and no symlink is ever followed."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from nemesis.faults.base import FaultError
from nemesis.faults.power import born_after_flush, cut_point, drop_unflushed


def _batch(base: int, last_delta: int, payload: int = 20) -> bytes:
    """A record batch header with the fields the cut reads; the rest is padding."""
    body = struct.pack(">ibiHi", 0, 2, 0, 0, last_delta) + b"\0" * payload
    return struct.pack(">qi", base, len(body)) + body


def test_cut_point_keeps_whole_batches_below_the_recovery_point():
    log = _batch(0, 4) + _batch(5, 4) + _batch(10, 4)
    one = len(_batch(0, 4))
    assert cut_point(log, 5) == (one, 2)  # offsets 0-4 stay; 5-9 and 10-14 go
    assert cut_point(log, 7) == (one, 2)  # a batch straddling the point goes whole
    assert cut_point(log, 15) == (len(log), 0)
    assert cut_point(log, 0) == (0, 3)
    # a torn tail goes too: a batch cut short, or a few bytes of a header
    assert cut_point(log + _batch(15, 4)[:30], 20) == (len(log), 1)
    assert cut_point(log + b"\0\0\0", 15) == (len(log), 0)


def test_a_power_loss_removes_the_segments_created_after_the_recovery_point(tmp_path):
    """Kafka fsyncs a partition's directory only when it flushes a segment created since the
    last recovery point: one created past it goes whole. Kept empty (the old cut), Kafka
    recovered a log end at its base offset over offsets it no longer held."""
    part = tmp_path / "chaos-0"
    part.mkdir()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n1\nchaos 0 10\n")
    (part / "00000000000000000000.log").write_bytes(_batch(0, 4) + _batch(5, 4))
    (part / "00000000000000000010.log").write_bytes(_batch(10, 4))
    (part / "00000000000000000015.log").write_bytes(_batch(15, 4) + _batch(20, 4))
    for name in ("00000000000000000010.index", "00000000000000000015.index"):
        (part / name).write_bytes(b"\0" * 8)
    (cut,) = drop_unflushed(tmp_path)
    assert (cut.recovery_point, cut.removed_batches) == (10, 3)
    assert sorted(p.name for p in part.iterdir()) == [
        "00000000000000000000.log", "00000000000000000010.log"]
    assert (part / "00000000000000000000.log").stat().st_size == 2 * len(_batch(0, 4))
    assert (part / "00000000000000000010.log").stat().st_size == 0  # flushed: it exists
    assert born_after_flush("00000000000000000015.log", 10)
    assert not born_after_flush("00000000000000000010.log", 10)


def _log_dir(root: Path, topics: tuple[str, ...] = ("chaos",)) -> Path:
    """A log dir whose partition 0 of each topic holds offsets 0-9 in two batches with its
    recovery point at 5."""
    root.mkdir()
    (root / "recovery-point-offset-checkpoint").write_text(
        f"0\n{len(topics)}\n" + "".join(f"{t} 0 5\n" for t in topics))
    for t in topics:
        (root / f"{t}-0").mkdir()
        (root / f"{t}-0" / "00000000000000000000.log").write_bytes(_batch(0, 4) + _batch(5, 4))
    return root


def test_only_the_run_topic_is_cut_on_a_cluster_we_did_not_start(tmp_path):
    """Old cut: every partition of the node, other teams' topics and __consumer_offsets
    included."""
    root = _log_dir(tmp_path / "data", ("chaos", "payments", "__consumer_offsets"))
    cut = drop_unflushed(root, "chaos")
    assert [(c.partition_dir, c.removed_batches) for c in cut] == [("chaos-0", 1)]
    for t in ("payments", "__consumer_offsets"):
        assert (root / f"{t}-0" / "00000000000000000000.log").stat().st_size == 2 * len(
            _batch(0, 4))
    # on a cluster of ours every partition loses its page cache
    assert {c.partition_dir for c in drop_unflushed(root)} == {
        "chaos-0", "payments-0", "__consumer_offsets-0"}


def test_a_planted_symlink_is_never_followed(tmp_path):
    """A segment, a partition dir or the checkpoint that is a symlink to a host file: the
    file it points at stays whole (old cut: truncated it)."""
    root = _log_dir(tmp_path / "data")
    victim = tmp_path / "host-file"
    victim.write_bytes(_batch(0, 4) + _batch(5, 4))
    size = victim.stat().st_size
    (root / "chaos-0" / "00000000000000000003.log").symlink_to(victim)  # before the rp
    (root / "chaos-0" / "00000000000000000009.log").symlink_to(victim)  # after it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "00000000000000000000.log").write_bytes(_batch(0, 4) + _batch(5, 4))
    (root / "chaos-1").symlink_to(elsewhere, target_is_directory=True)
    (cut,) = drop_unflushed(root)
    assert (cut.partition_dir, cut.removed_batches) == ("chaos-0", 1)
    assert victim.stat().st_size == size
    assert (root / "chaos-0" / "00000000000000000009.log").is_symlink()
    assert (elsewhere / "00000000000000000000.log").stat().st_size == size
    (root / "recovery-point-offset-checkpoint").unlink()
    (root / "recovery-point-offset-checkpoint").symlink_to(victim)
    with pytest.raises(FaultError, match="is a symlink; not followed"):
        drop_unflushed(root)
