"""``kafka-chaos replay DIR --repeat N``: a run's configuration and its fault schedule as it
happened (replay.toml, saved beside it), N times, and a tally of the runs that showed its
finding again."""

from __future__ import annotations

from pathlib import Path

from runner.explore.as_happened import read_run
from runner.explore.findings import label, tally, violations
from runner.explore.trials import REPLAY_FILE, read_results, run_trials, save_replay


def replay(run_dir: Path, repeat: int, out: str) -> int:
    """Exit 0 when at least one run reproduced the finding (a VALID original: when every
    run was VALID too), 1 when none did; RunConfigError before anything runs."""
    record = read_run(run_dir)
    finding = list(violations(read_results(run_dir)))
    doc = record.replay_doc()
    path = save_replay(doc, run_dir / REPLAY_FILE)
    print(f"replaying {run_dir} ({label(finding)}) {repeat} time(s): {path}")
    got = run_trials(doc, out, repeat, finding)
    if got.results:
        print(tally(finding, got.results))
    if got.interrupted:
        print("interrupted: the runs so far are kept")
        return 2
    hits = got.hits(finding)
    return 0 if (hits == len(got.results) if not finding else hits > 0) else 1
