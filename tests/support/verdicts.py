"""Assertions on results.json that several real-cluster tests share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contract.faults import FAULTS
from contract.known_bugs import EPOCH_BUMP_RESEND


def assert_only_accepted_bug(res: Mapping[str, Any], kinds: tuple[str, ...] = (
        "duplicate", "reorder"), bug: str = EPOCH_BUMP_RESEND) -> None:
    """Every record of ``kinds`` is explained by the accepted known bug ``bug`` and named
    with it: the only way such records may leave a verdict valid. A count of 0 passes, and
    then says nothing more than that the kind was not seen."""
    assert bug in res["accepted_known"], res["accepted_known"]
    for kind in kinds:
        entry = res["anomalies"][kind]
        n = entry["count"]
        assert entry.get("known_bugs", {}).get(bug, 0) == n, (kind, entry)
        assert entry.get("accepted", 0) == n, (kind, entry)
        assert n == 0 or entry["allowed"], (kind, entry)
        for e in entry["examples"]:
            tag = e.get("known_bug") or {}
            assert tag.get("id") == bug and tag.get("accepted"), (kind, e)


def assert_script_faults_declared(scenario: Any, run_dir: Path) -> None:
    """Every fault a scripted scenario's run started is of a kind the scenario declares
    (``script_faults``: what is checked before a run on someone else's cluster)."""
    if scenario.script is None:
        return
    started = set()
    for line in (run_dir / "history" / "events.jsonl").read_text().splitlines():
        e = json.loads(line) if line.strip() else {}
        if e.get("kind") in FAULTS and e.get("phase") in ("start", "instant"):
            started.add(e["kind"])
    assert started <= set(scenario.script_faults), (scenario.name, started)
