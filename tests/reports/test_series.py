"""Plot data: per-bucket counts and latency percentiles, leadership segments, SVG helpers."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from reports import svg
from reports.cluster_state import load_cluster_state
from reports.throughput import MAX_BUCKETS, bucket_width, downsample, from_checker, from_history
from tests.support.tables import table, write_single_file

from .conftest import T0, S


def test_counts_and_percentiles_per_bucket(tmp_path: Path) -> None:
    # Bucket 0: ok latencies 1..100 ms; bucket 2: one fail (7 ms) and one info that never ended.
    invoke = [T0 + i * 1_000_000 for i in range(100)] + [T0 + 2 * S, T0 + 2 * S]
    complete = [v + (i + 1) * 1_000_000 for i, v in enumerate(invoke[:100])] + [
        T0 + 2 * S + 7_000_000, None]
    write_single_file(tmp_path / "w.parquet", table("writes", {
        "invoke_ns": invoke, "complete_ns": complete, "outcome": ["ok"] * 100 + ["fail", "info"]}))
    s = from_history(tmp_path / "w.parquet", T0, 3.0)
    assert s.bucket_s == 1 and s.t == [0, 1, 2]
    assert s.rate["ok"] == [100, 0, 0]
    assert s.rate["fail"] == [0, 0, 1] and s.rate["info"] == [0, 0, 1]
    assert s.latency_ms["ok.max"][0] == 100 and s.latency_ms["ok.p50"][0] == 50
    assert s.latency_ms["ok.p99"][0] == 99
    assert s.latency_ms["fail.p50"] == [None, None, 7]
    assert s.latency_ms["info.max"] == [None, None, None]  # never completed: no latency


def test_bucket_width_keeps_plots_small() -> None:
    for duration in (1, 60, 599, 3600, 86_400, 10**7):
        assert duration / bucket_width(duration) <= MAX_BUCKETS


def _checker_series(ok: list[int], p99: list[float | None] | None = None,
                    t0_ns: int = T0) -> dict:
    """results["timeseries"] in the checker's form (contract.results.Timeseries)."""
    p99 = p99 if p99 is not None else [None] * len(ok)
    points = [{"t_s": float(i), "ok": n, "fail": 1, "info": 0, "reads": 0,
               "latency_p50_ms": None, "latency_p99_ms": q, "latency_max_ms": q}
              for i, (n, q) in enumerate(zip(ok, p99, strict=True))]
    return {"timeseries": {"t0_ns": t0_ns, "bucket_s": 1.0, "columns": [], "points": points}}


def test_checker_series_is_used_shifted_to_the_run_origin_and_downsampled() -> None:
    s = from_checker(_checker_series([10] * 5, [float(i) for i in range(5)], T0 + 2 * S), T0)
    assert s is not None and s.source == "checker" and s.rate["ok"] == [10.0] * 5
    assert s.t[0] == 2.0 and s.rate["fail"] == [1.0] * 5
    assert s.latency_ms["ok.p99"] == [0, 1, 2, 3, 4]
    s = from_checker(_checker_series([5] * 2000), T0)
    assert s is not None and len(s.t) <= MAX_BUCKETS and s.rate["ok"][0] == 5.0
    assert from_checker({}, T0) is None and from_checker(_checker_series([]), T0) is None


def test_checker_series_gaps_are_zero_not_a_ramp() -> None:
    series = _checker_series([4, 4])
    series["timeseries"]["points"][1]["t_s"] = 3.0  # buckets 1 and 2 had no write
    s = from_checker(series, T0)
    assert s is not None and s.rate["ok"] == [4.0, 0.0, 0.0, 4.0]


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=5000))
def test_downsample_keeps_the_mean_rate_and_the_worst_tail(values: list[int]) -> None:
    s = from_checker(_checker_series(values, [float(v) for v in values]), T0)
    assert s is not None
    d = downsample(s)
    assert len(d.t) <= MAX_BUCKETS
    assert max(v for v in d.latency_ms["ok.p99"] if v is not None) == max(values)
    total = sum(r * d.bucket_s for r in d.rate["ok"])
    assert abs(total - sum(values)) < 1e-6 * max(1, sum(values)) + len(values)


@given(st.floats(-1e6, 1e6), st.floats(0.001, 1e6))
def test_nice_ticks_cover_the_range_in_order(lo: float, span: float) -> None:
    ticks = svg.nice_ticks(lo, lo + span)
    assert ticks == sorted(ticks) and 1 <= len(ticks) <= 12
    assert all(lo - span * 1e-6 <= t <= lo + span * (1 + 1e-6) for t in ticks)


def test_leadership_segments_merge_equal_samples(hand_run: Path) -> None:
    state = load_cluster_state(hand_run / "history/observations.parquet", T0, 20.0)
    [lane] = state.lanes
    assert [(s.leader, s.isr) for s in lane.segments] == [(1, (1, 2)), (-1, (2,)), (2, (2,))]
    assert lane.leader_changes == 2 and lane.min_isr == 1
    assert abs(lane.offline_s - 1.0) < 0.05
    assert state.brokers == [1, 2]


def test_a_segment_keeps_the_epoch_a_later_sample_missed(tmp_path: Path) -> None:
    # The observer learns the epoch in about every other sample; the segment's last sample
    # has none, and the segment must still show the one learned before.
    epochs = [4, None, 4, None]
    write_single_file(tmp_path / "obs.parquet", table("observations", {
        "ts_ns": [T0 + i * S for i in range(4)], "topic": ["t"] * 4, "partition": [0] * 4,
        "leader": [1] * 4, "isr": [[1, 2]] * 4, "replicas": [[1, 2]] * 4,
        "leader_epoch": epochs}))
    [lane] = load_cluster_state(tmp_path / "obs.parquet", T0, 4.0).lanes
    assert [(s.leader, s.isr, s.epoch) for s in lane.segments] == [(1, (1, 2), 4)]
