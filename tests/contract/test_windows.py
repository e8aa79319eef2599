"""fault_windows on literal event lists: the one pairing the checker and the report share."""

from __future__ import annotations

from contract.events import Event
from contract.windows import fault_windows


def spans(events: list[Event]) -> list[tuple[str, tuple, int, int | None]]:
    return [(w.kind, w.targets, w.start_ns, w.end_ns) for w in fault_windows(events)]


def test_start_end_pairs_by_kind_and_targets_oldest_first() -> None:
    got = spans([
        Event(1, "kill", "start", (1,)), Event(2, "kill", "start", (2,)),
        Event(3, "kill", "end", (2,)), Event(4, "kill", "end", (1,)),
        Event(5, "partition", "start", (3,)),
    ])
    assert got == [("kill", (1,), 1, 4), ("kill", (2,), 2, 3), ("partition", (3,), 5, None)]


def test_an_end_of_other_targets_does_not_close_a_window() -> None:
    # The attribution's old copy closed kill n1 with the end of a kill n2 it never saw start.
    got = spans([Event(1, "kill", "start", (1,)), Event(2, "kill", "end", (2,))])
    assert got == [("kill", (1,), 1, None)]


def test_phases_and_other_instants_are_not_windows() -> None:
    got = spans([
        Event(0, "phase", "start", (), {"name": "workload"}),
        Event(1, "situation", "instant", (1,)), Event(2, "nemesis-error", "instant"),
        Event(3, "fault-error", "instant", (), {"fault": "pause", "error": "x"}),
        Event(9, "phase", "end", (), {"name": "workload"}),
    ])
    assert got == []


def test_instant_faults_close_on_their_closing_kind() -> None:
    got = spans([
        Event(30, "kill", "instant", (1,)), Event(40, "start", "instant", (1,)),
        Event(50, "partition", "instant", (1, 2)), Event(60, "heal", "instant", ()),
        Event(70, "kill", "instant", (3,)),
        Event(80, "pause", "instant", (2,)), Event(85, "resume", "instant", (2,)),
        Event(90, "slow", "instant", (1,)), Event(95, "heal", "instant", (1,)),
        Event(96, "power-loss", "instant", (2,)),
    ])
    assert got == [("kill", (1,), 30, 40), ("partition", (1, 2), 50, 60),
                   ("kill", (3,), 70, None), ("pause", (2,), 80, 85), ("slow", (1,), 90, 95),
                   ("power-loss", (2,), 96, None)]


def test_a_closer_with_targets_ends_only_overlapping_windows() -> None:
    # The report's old copy needed the exact target tuple; the checker's ignored a heal's
    # targets altogether. A heal of n2 ends the partition of (1, 2) and leaves n3's.
    got = spans([
        Event(1, "partition", "instant", (1, 2)), Event(2, "partition", "instant", (3,)),
        Event(5, "heal", "instant", (2,)),
    ])
    assert got == [("partition", (1, 2), 1, 5), ("partition", (3,), 2, None)]


def test_a_restart_ends_a_kill_recorded_as_a_start_event() -> None:
    got = spans([Event(1, "kill", "start", (1,)), Event(4, "start", "instant", (1,))])
    assert got == [("kill", (1,), 1, 4)]


def test_targets_compare_as_text_so_json_ints_and_names_agree() -> None:
    got = spans([Event(1, "pause", "start", (2,)), Event(3, "pause", "end", ("2",))])
    assert got == [("pause", (2,), 1, 3)]


def test_active_at_includes_both_ends_and_open_windows() -> None:
    w, open_ = fault_windows([Event(10, "pause", "start", (1,)), Event(20, "pause", "end", (1,)),
                              Event(30, "kill", "start", (2,))])
    assert [w.active_at(t) for t in (9, 10, 20, 21)] == [False, True, True, False]
    assert open_.active_at(10**12) and not open_.ended and w.ended
