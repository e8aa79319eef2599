"""A history part the full disk refuses is kept, whole, and written once there is space
(issue 47: a failed Parquet flush dropped its rows). The disk is a real one: a 256 KiB tmpfs
(mounted here; the suite runs as root), filled up with a file of our own."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from workloads.history import ChunkedParquetWriter, HistoryNotWritten

SCHEMA = pa.schema([("seq", pa.int64()), ("pad", pa.string())])


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: close has nothing to write
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def _rows(w: ChunkedParquetWriter, first: int, n: int) -> None:
    for s in range(first, first + n):
        w.append_values((s, f"row {s}"))


def _seqs(d: Path) -> list[int]:
    return sorted(ds.dataset(d, format="parquet").to_table().column("seq").to_pylist())


def test_rows_wait_for_space_and_are_written_in_order(small_disk: Path) -> None:
    w = ChunkedParquetWriter(small_disk / "h.parquet", SCHEMA, "p0", chunk_rows=10_000,
                             flush_interval_s=3600)
    _rows(w, 0, 100)
    w.flush()
    filler = _fill(small_disk)
    _rows(w, 100, 100)
    w.flush()  # refused: kept, not raised, not lost (was: the 100 rows dropped)
    _rows(w, 200, 100)
    w.flush()  # refused again, after the first
    assert w.buffered == 200 and w.rows_written == 100
    filler.unlink()
    _rows(w, 300, 1)
    w.close()
    assert _seqs(small_disk / "h.parquet") == list(range(301))
    assert w.rows_written == 301


def test_a_disk_that_stays_full_is_one_line_at_close(small_disk: Path) -> None:
    w = ChunkedParquetWriter(small_disk / "h.parquet", SCHEMA, "p0", flush_interval_s=3600)
    _fill(small_disk)
    _rows(w, 0, 50)
    with pytest.raises(HistoryNotWritten) as e:
        w.close()
    assert str(e.value) == (f"history not written: the disk under {small_disk / 'h.parquet'} "
                            "is full (50 rows of p0 lost)")


def test_a_run_without_room_for_its_history_is_refused_before_it_starts(small_disk: Path) -> None:
    from tests.run.cli import CLI

    out = small_disk / "runs"
    proc = subprocess.run([*CLI, "run", "--out", str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"kafka-chaos: error: only 0 MiB free under {out} (a run needs 1024 MiB for its "
        "history and logs)"]
    assert not out.exists()
