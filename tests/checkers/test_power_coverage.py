"""Which partitions a power loss covers (every in-sync replica lost power together): the
checker's excuse for a loss under acks=all; and the change rows it reads the ISR from."""

from __future__ import annotations

import pytest

from checkers.history import OBSERVATIONS_SCHEMA, Event
from checkers.observations import Change, PartitionHistory, collect_changes, power_loss_coverage

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


@pytest.mark.spark
def test_epochs_the_observer_missed_are_not_changes(spark) -> None:  # type: ignore[no-untyped-def]
    # The observer learns the epoch about every other sample: 0, null, 0, null…
    rows = [(1, 1, [1, 2, 3], 0), (2, 1, [1, 2, 3], None), (3, 1, [1, 2, 3], 0),
            (4, 1, [1], None), (5, 1, [1], 0), (6, -1, [1], None), (7, 1, [1], None),
            (8, 1, [1, 2], 1), (9, 1, [1, 2], None)]
    obs = spark.createDataFrame(
        [(t * S, "t", 0, leader, isr, [1, 2, 3], epoch, None, None)
         for t, leader, isr, epoch in rows],
        OBSERVATIONS_SCHEMA)
    history, n = collect_changes(obs)
    got = [(c.ts_ns // S, c.leader, list(c.isr), c.leader_epoch) for c in history.all]
    assert got == [(1, 1, [1, 2, 3], 0), (4, 1, [1], 0), (6, -1, [1], None),
                   (7, 1, [1], None), (8, 1, [1, 2], 1)] and n == 5
    # The unreplicated tail goes at the next leader term, not at the next sample.
    nxt = history.first_leadership_change_after("t:0", 1 * S)
    assert nxt is not None and nxt.ts_ns == 6 * S
