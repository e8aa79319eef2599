"""The moves of shrink on literal cases: what is tried, in which order, and what is never
tried (a move that would leave a fault without its target)."""

from __future__ import annotations

from runner.explore.as_happened import Happened, Schedule
from runner.explore.shrink import Budget, Case, moves

THREE = Schedule([Happened("slow", "leader:0", 3.0, 5.0, {"delay_ms": 30.0}),
                  Happened("pause", "follower:0", 5.0, 7.0),
                  Happened("power-loss", "all", 10.0, 13.0)], settle_s=6.0)


def test_faults_are_dropped_first_oldest_first_then_holds_then_the_workload() -> None:
    case = Case({"brokers": 4, "replication_factor": 3, "partitions": 3, "producers": 2,
                 "rate": 100.0, "duration": 60.0}, THREE)
    names = [name for name, _ in moves(case)]
    assert names == [
        "drop slow@leader:0 at 3s", "drop pause@follower:0 at 5s",
        "drop power-loss@all at 10s",
        "halve the hold of slow@leader:0 to 1.0s", "halve the hold of pause@follower:0 to 1.0s",
        "halve the hold of power-loss@all to 1.5s",
        "producers 1", "partitions 1", "brokers 3", "rate 50/s", "duration 30s"]
    dropped = dict(moves(case))["drop pause@follower:0 at 5s"]
    assert [f.kind for f in dropped.schedule.faults] == ["slow", "power-loss"]
    halved = dict(moves(case))["halve the hold of power-loss@all to 1.5s"]
    assert halved.schedule.faults[2].end_s == 11.5
    assert case.schedule.faults[2].end_s == 13.0  # the case itself is unchanged


def test_no_move_drops_what_a_fault_aims_at_or_goes_below_the_floors() -> None:
    sched = Schedule([Happened("kill", "leader:1", 2.0, 2.8), Happened("pause", "3", 4.0, 5.0)],
                     settle_s=5.0)
    case = Case({"brokers": 3, "replication_factor": 3, "partitions": 2, "producers": 1,
                 "rate": 15.0, "duration": 12.0}, sched)
    names = [name for name, _ in moves(case)]
    # partitions 1 would lose partition 1 (leader:1); brokers 2 is below the replication
    # factor; holds under 2 s are not halved; 7.5/s is below the lowest rate; 12 s is
    # already about the last step (5 s) + 5 s
    assert names == ["drop kill@leader:1 at 2s", "drop pause@3 at 4s"]


def test_the_budget_counts_runs_and_time() -> None:
    b = Budget(3600, runs=4)
    assert b.spent() is None and b.left_runs(3) == 3
    b.used_runs = 3
    assert b.left_runs(3) == 1 and b.spent(1) is None
    assert b.spent(2) == "the run budget (4 runs) is spent"  # a step needs 2 runs
    b.used_runs = 4
    assert b.spent() == "the run budget (4 runs) is spent"
    assert Budget(0, None).spent() == "the time budget (0s) is spent"
