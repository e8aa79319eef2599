"""``explore.json``: what ``kafka-chaos explore`` writes into its folder after every run, and
what ``kafka-chaos report`` of that folder reads for its findings index (DESIGN.md §5)."""

from __future__ import annotations

from typing import Any, TypedDict

#: The explore folder's index file.
EXPLORE_FILE = "explore.json"


class _ExploreRunRequired(TypedDict):
    index: int
    run_dir: str | None
    options: dict[str, Any]
    valid: bool | str | None
    violations: dict[str, int]
    seconds: float


class ExploreRun(_ExploreRunRequired, total=False):
    """One draw: its number, its run directory (relative to the explore folder, None when
    it failed before one was made), the options drawn, the verdict (None: not checked, the
    explore was interrupted during it), the violations that made it a finding ({} for none:
    runner.explore.findings) and how long it took; ``unknown_reasons``: why an unknown run
    could not tell (results.json's)."""

    unknown_reasons: list[str]


class Explore(TypedDict):
    """The whole file. ``stopped``: why the explore ended (budget, runs, interrupted)."""

    seed: int
    budget_s: float
    started_at: str
    runs: list[ExploreRun]
    covered: dict[str, list[str]]
    stopped: str
