"""Reading run directories: Parquet files or part-file directories, events, timelines."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from reports.datasets import column_bounds, count_rows, load_events, read_table
from reports.timeline import build_timeline

from .conftest import T0, S


def test_single_file_and_directory_of_parts_read_the_same(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array(range(10), pa.int64())})
    pq.write_table(table, tmp_path / "one.parquet")
    parts = tmp_path / "many.parquet"
    parts.mkdir()
    pq.write_table(table.slice(0, 4), parts / "part-0-000000.parquet")
    pq.write_table(table.slice(4), parts / "part-0-000001.parquet")
    (parts / "part-0-000002.parquet.tmp").write_bytes(b"half a chunk")  # still being written
    for path in (tmp_path / "one.parquet", parts):
        assert read_table(path, ["a"]).column("a").to_pylist() == list(range(10))
        assert count_rows(path) == 10
        assert column_bounds(path, "a") == (0, 9)


def test_absent_dataset_is_zero_rows_and_missing_columns_are_null(tmp_path: Path) -> None:
    assert read_table(tmp_path / "nope.parquet", ["a", "b"]).num_rows == 0
    assert count_rows(tmp_path / "nope.parquet") == 0
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "x.parquet")
    t = read_table(tmp_path / "x.parquet", ["a", "b"])
    assert t.column("b").to_pylist() == [None, None]


def test_torn_last_event_line_is_ignored(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    p.write_text(json.dumps({"ts_ns": 1, "kind": "kill", "phase": "start"}) + "\n{\"ts_ns\": 2, ")
    assert [e["ts_ns"] for e in load_events(p)] == [1]


def ev(ts_s: float, kind: str, phase: str, targets: list[str] | None = None, **detail) -> dict:
    return {"ts_ns": T0 + int(ts_s * S), "kind": kind, "phase": phase,
            "targets": targets or [], "detail": detail}


def test_fault_windows_pair_per_kind_and_targets() -> None:
    tl = build_timeline([
        ev(0, "phase", "start", name="workload"),
        ev(1, "kill", "start", ["n1"]),
        ev(2, "kill", "start", ["n2"]),
        ev(3, "kill", "end", ["n2"]),
        ev(4, "kill", "end", ["n1"]),
        ev(5, "partition", "start", ["n3"]),  # never ends: lasts until the run's end
        ev(10, "phase", "end", name="workload"),
    ], None, None)
    spans = [(f.label, tl.rel_s(f.start_ns), tl.rel_s(f.end_ns), f.ended) for f in tl.faults]
    assert spans == [("kill n1", 1, 4, True), ("kill n2", 2, 3, True),
                     ("partition n3", 5, 10, False)]
    assert [(p.name, tl.rel_s(p.start_ns), tl.rel_s(p.end_ns)) for p in tl.phases] == [
        ("workload", 0, 10)]
    assert [f.label for f in tl.faults_at(T0 + int(2.5 * S))] == ["kill n1", "kill n2"]


def test_instant_pause_resume_pair_into_a_window_and_data_extends_the_span() -> None:
    # The contract's pairing (contract.windows): an instant power-loss opens a window that a
    # restart ("start") of the node ends, as for kill; never restarted, it lasts to the end.
    tl = build_timeline([ev(2, "pause", "instant", ["n2"]), ev(6, "resume", "instant", ["n2"]),
                         ev(7, "power-loss", "instant", ["n1"]),
                         ev(8, "situation", "instant", ["n3"], what="isr shrunk"),
                         # a producer's first id is no marker; its epoch bump is
                         ev(1, "producer-epoch", "instant", [0], bump=False),
                         ev(9, "producer-epoch", "instant", [0], bump=True)],
                        T0, T0 + 20 * S)
    assert [(f.label, tl.rel_s(f.start_ns), tl.rel_s(f.end_ns), f.ended)
            for f in tl.faults] == [("pause n2", 2, 6, True), ("power-loss n1", 7, 20, False)]
    assert [e["kind"] for e in tl.instants] == ["situation", "producer-epoch"]
    assert tl.duration_s == 20


def test_no_events_at_all_still_gives_a_timeline() -> None:
    tl = build_timeline([], None, None)
    assert tl.faults == [] and tl.duration_s == 0
