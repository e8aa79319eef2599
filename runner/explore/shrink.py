"""``kafka-chaos shrink DIR``: the smallest replay that still shows a run's finding.

It starts from the run's schedule as it happened (replay.toml) and tries one smaller case at
a time, first-improvement: drop a fault (oldest first), halve a fault's hold, then fewer
producers, partitions and brokers, a lower rate, a shorter workload. A step is kept only
while the finding reproduces in at least ``k`` of ``n`` runs; after a kept step the moves
start over from the smaller case (a move that did not reproduce is not tried again). The
replay is confirmed first: a finding that does not come back is "not reproduced". It stops
when no move is kept or the budget (time, runs) is spent, and says which; the smallest case
is saved as ``shrunk.toml`` beside the run.

The moves are a pure function of a case (tested on literal cases); only :func:`shrink` runs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.explore.as_happened import (
    Happened,
    Schedule,
    read_run,
    replay_config,
    replay_name,
    scenario_doc,
)
from runner.explore.findings import label, violations
from runner.explore.trials import read_results, run_trials, save_replay

SHRUNK_FILE = "shrunk.toml"
#: The shortest hold, lowest rate and shortest workload a move goes down to.
MIN_HOLD_S = 1.0
MIN_RATE = 10.0
MIN_DURATION_S = 10.0


@dataclass(frozen=True)
class Case:
    """What a replay runs: the run options and the faults with their times."""

    config: dict[str, Any]
    schedule: Schedule

    def describe(self) -> str:
        faults = ", ".join(f"{f.kind}@{f.target} {f.start_s:g}-"
                           f"{'end' if f.end_s is None else f'{f.end_s:g}'}s"
                           for f in self.schedule.faults) or "no faults"
        c = self.config
        return (f"{faults}; brokers {c.get('brokers', 3)}, partitions "
                f"{c.get('partitions', 3)}, producers {c.get('producers', 2)}, rate "
                f"{c.get('rate', 200.0):g}/s, duration {c.get('duration', 60.0):g}s")


def _with_faults(case: Case, faults: list[Happened]) -> Case:
    return Case(case.config, dataclasses.replace(case.schedule, faults=faults))


def _with(case: Case, **changes: Any) -> Case:
    return Case({**case.config, **changes}, case.schedule)


def moves(case: Case) -> Iterator[tuple[str, Case]]:
    """Every one-step smaller case, in the order they are tried, each with its name."""
    faults = case.schedule.faults
    for i in range(len(faults)):
        f = faults[i]
        yield f"drop {f.kind}@{f.target} at {f.start_s:g}s", _with_faults(
            case, faults[:i] + faults[i + 1:])
    end = float(case.config.get("duration", 60.0))
    for i, f in enumerate(faults):
        hold = f.hold_s(end)
        if hold / 2 >= MIN_HOLD_S:
            shorter = dataclasses.replace(f, end_s=round(f.start_s + hold / 2, 1))
            yield f"halve the hold of {f.kind}@{f.target} to {hold / 2:.1f}s", _with_faults(
                case, faults[:i] + [shorter] + faults[i + 1:])
    c = case.config
    if c.get("producers", 2) > 1:
        yield "producers 1", _with(case, producers=1)
    if c.get("partitions", 3) > 1 and not _names_partition(faults, c["partitions"] // 2):
        yield f"partitions {c['partitions'] // 2}", _with(case, partitions=c["partitions"] // 2)
    brokers = c.get("brokers", 3)
    if brokers > c.get("replication_factor", 3) and not _names_broker(faults, brokers):
        yield f"brokers {brokers - 1}", _with(case, brokers=brokers - 1)
    rate = float(c.get("rate", 200.0))
    if rate / 2 >= MIN_RATE:
        yield f"rate {rate / 2:g}/s", _with(case, rate=rate / 2)
    needed = max(MIN_DURATION_S, case.schedule.last_step_s() + 5)
    if end / 2 >= needed or end > needed + 5:
        shorter_end = round(max(needed, end / 2), 1)
        yield f"duration {shorter_end:g}s", _with(case, duration=shorter_end)


def _names_partition(faults: list[Happened], keep: int) -> bool:
    """Whether a fault is aimed at a partition that ``keep`` partitions would not have."""
    for f in faults:
        if ":" in f.target and f.target.split(":", 1)[1].isdigit() \
                and int(f.target.split(":", 1)[1]) >= keep:
            return True
    return False


def _names_broker(faults: list[Happened], broker: int) -> bool:
    """Whether a fault is aimed at broker id ``broker`` (the one fewer brokers drop)."""
    return any(str(broker) in f.target.split(",") for f in faults)


@dataclass
class Budget:
    """Time and runs a shrink may spend."""

    seconds: float
    runs: int | None
    started: float = dataclasses.field(default_factory=time.monotonic)
    used_runs: int = 0

    def spent(self, k: int = 1) -> str | None:
        """Why no further step can be tried (one needs ``k`` runs at least), or None."""
        if time.monotonic() - self.started >= self.seconds:
            return f"the time budget ({self.seconds:.0f}s) is spent"
        if self.runs is not None and self.runs - self.used_runs < k:
            return f"the run budget ({self.runs} runs) is spent"
        return None

    def left_runs(self, n: int) -> int:
        return n if self.runs is None else max(0, min(n, self.runs - self.used_runs))


def shrink(run_dir: Path, out: str, n: int, k: int, budget: Budget) -> int:
    """Exit 0 with a smaller (or the same) case that reproduces in ``k`` of ``n`` runs, 1
    when the finding did not reproduce from the start; RunConfigError before anything runs."""
    record = read_run(run_dir)
    finding = list(violations(read_results(run_dir)))
    if not finding:
        from runner.config import RunConfigError

        raise RunConfigError(f"{run_dir} is VALID: there is no finding to shrink")
    expect = record.run_json.get("expect")
    name = replay_name(str(record.run_json.get("scenario", "run")))
    summary = f"{record.run_json.get('scenario')} {run_dir.resolve().name}, shrunk"

    def doc_of(case: Case) -> dict[str, Any]:
        return scenario_doc(name, summary, case.config, case.schedule, expect)
    case = Case(replay_config(record.run_json), record.schedule)
    print(f"shrinking {run_dir}: {label(finding)}; a step is kept when {k} of {n} runs "
          f"reproduce it")
    print(f"start: {case.describe()}")

    def holds(c: Case) -> tuple[bool, str]:
        want = budget.left_runs(n)
        if want < k:
            return False, ""
        got = run_trials(doc_of(c), out, want, finding, need=k)
        budget.used_runs += len(got.results)
        if got.interrupted:
            raise KeyboardInterrupt
        return got.hits(finding) >= k, f"{got.hits(finding)}/{len(got.results)}"

    rate = ""
    try:
        ok, rate = holds(case)
        if not ok:
            print(f"not reproduced ({rate or 'no run left in the budget'}): the finding did "
                  "not come back from its replay; nothing to shrink")
            return 1
        print(f"reproduced {rate} as it happened")
        stopped = "no smaller step reproduces"
        failed: set[str] = set()  # a move that did not reproduce is not tried again
        improved = True
        while improved:
            improved = False
            for what, smaller in moves(case):
                if what in failed:
                    continue
                if (why := budget.spent(k)) is not None:
                    stopped = why
                    break
                ok, got_rate = holds(smaller)
                print(f"  {what}: {'kept' if ok else 'not kept'} ({got_rate or 'not run'})")
                if ok:
                    case, rate, improved = smaller, got_rate, True
                    break
                failed.add(what)
    except KeyboardInterrupt:
        stopped = "interrupted"
    path = save_replay(doc_of(case), run_dir / SHRUNK_FILE)
    print(f"stopped: {stopped}, after {budget.used_runs} run(s)")
    print(f"smallest: {case.describe()} (reproduced {rate})")
    print(f"saved: {path} (kafka-chaos run --scenario-file {path} --scenario {name})")
    return 0
