"""Pure helpers of the stats and event parsing (no Spark); fault windows: tests/contract."""

from __future__ import annotations

from checkers.stats import _gaps, _percentile
from contract.events import parse_events

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
