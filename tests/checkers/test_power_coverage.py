"""Which partitions a power loss covers (every in-sync replica lost power together): the
checker's excuse for a loss under acks=all. Pure Python, no Spark."""

from __future__ import annotations

from checkers.history import Event
from checkers.observations import Change, PartitionHistory, power_loss_coverage

S = 1_000_000_000


def seen(ts_s: float, isr: list[int], leader: int = 1) -> Change:
    return Change(int(ts_s * S), "t", 0, leader, tuple(isr), None, None, None, None)


def crash(ts_s: float, targets: list[int], **detail: object) -> Event:
    return Event(int(ts_s * S), "power-loss", "start", tuple(targets), dict(detail))


def test_observed_single_member_isr_is_covered() -> None:
    parts = PartitionHistory([seen(1, [1, 2, 3]), seen(5, [1])])
    assert power_loss_coverage([crash(6, [1])], parts, ["t:0"], 3) == {"t:0": 6 * S}


def test_observed_larger_isr_is_not_covered() -> None:
    parts = PartitionHistory([seen(1, [1, 2, 3]), seen(5, [1, 2])])
    assert power_loss_coverage([crash(6, [1])], parts, ["t:0"], 3) == {}


def test_the_faults_own_reading_wins_over_a_stale_sample() -> None:
    # The observer's last sample still shows two members; the fault read [1] just before.
    parts = PartitionHistory([seen(1, [1, 2, 3]), seen(5, [1, 2])])
    ev = crash(6, [1], isr_before={"t:0": [1]})
    assert power_loss_coverage([ev], parts, ["t:0"], 3) == {"t:0": 6 * S}
    # ...and the other way round: a stale single-member sample does not excuse a crash
    # that the cluster said left another in-sync replica alive.
    parts = PartitionHistory([seen(5, [1])])
    ev = crash(6, [1], isr_before={"t:0": [1, 3]})
    assert power_loss_coverage([ev], parts, ["t:0"], 3) == {}


def test_without_any_isr_only_a_whole_cluster_crash_covers() -> None:
    parts = PartitionHistory([])
    assert power_loss_coverage([crash(6, [1, 2])], parts, ["t:0"], 3) == {}
    assert power_loss_coverage([crash(6, [1, 2, 3])], parts, ["t:0"], 3) == {"t:0": 6 * S}


def test_crashes_within_the_window_form_one_group_read_at_the_first() -> None:
    first = crash(6, [1], isr_before={"t:0": [1, 2]})
    second = crash(8, [2], isr_before={"t:0": [2]})  # read after 1 fell: not the ISR hit
    parts = PartitionHistory([seen(1, [1, 2])])
    assert power_loss_coverage([first, second], parts, ["t:0"], 3) == {"t:0": 8 * S}
    # Too far apart: separate crashes, and neither hit a whole ISR on its own.
    late = crash(20, [2], isr_before={"t:0": [1, 2]})
    assert power_loss_coverage([first, late], parts, ["t:0"], 3) == {}
