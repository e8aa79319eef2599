"""Pure helpers of the stats and attribution (no Spark)."""

from __future__ import annotations

from checkers.attribution import fault_intervals
from checkers.history import Event, parse_events
from checkers.stats import _gaps, _percentile

S = 1_000_000_000


def test_gaps_longest_and_total() -> None:
    # acks in 0.1 s steps 10..12 and 20; window [1.0 s, 2.5 s]
    longest, total = _gaps([10, 11, 12, 20], 1 * S, 2 * S + S // 2)
    assert longest == 0.7  # steps 13..19
    assert total == 1.1  # 13..19 (0.7) + 21..24 (0.4)


def test_gaps_without_any_ack_is_whole_window() -> None:
    assert _gaps([], 0, 2 * S) == (2.0, 2.0)


def test_percentile_from_histogram() -> None:
    hist = {0: 50, 10: 49, 20: 1}
    assert _percentile(hist, 0.5) is not None
    assert _percentile(hist, 0.5) < _percentile(hist, 0.99) <= _percentile(hist, 1.0)  # type: ignore[operator]
    assert _percentile({}, 0.5) is None


def test_torn_last_line_ignored() -> None:
    text = '{"ts_ns": 2, "kind": "kill", "phase": "instant", "targets": [1]}\n{"ts_ns": 1, "ki'
    events, bad = parse_events(text)
    assert [e.kind for e in events] == ["kill"] and bad == 1


def test_fault_intervals_pair_starts_ends_and_instants() -> None:
    events = [
        Event(10, "pause", "start", (2,)), Event(20, "pause", "end", (2,)),
        Event(30, "kill", "instant", (1,)), Event(40, "start", "instant", (1,)),
        Event(50, "partition", "instant", (1, 2)), Event(60, "heal", "instant", ()),
        Event(70, "kill", "instant", (3,)),
    ]
    got = [(f.kind, f.start_ns, f.end_ns) for f in fault_intervals(events)]
    assert got == [("pause", 10, 20), ("kill", 30, 40), ("partition", 50, 60),
                   ("kill", 70, None)]
