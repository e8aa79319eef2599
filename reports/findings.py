"""The findings index of an explore folder (``explore.json``, contract.explore): every run
that was not VALID, grouped by violation and, within one, by configuration, for the matrix
page of that folder (``kafka-chaos report <explore folder>``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.explore import EXPLORE_FILE

#: The options a finding's configuration is told by (the rest are in its replay.toml).
CONFIG_KEYS = ("kafka_version", "client", "acks", "min_insync", "replication_factor",
               "unclean", "idempotence", "transactions", "consumer_mode")


@dataclass
class FindingRun:
    index: int
    run_dir: str | None
    count: int
    faults: str
    replay: str | None
    note: str = ""  # an unknown run: why it could not tell


@dataclass
class FindingGroup:
    """One violation's runs, by configuration (``key=value …`` -> runs)."""

    violation: str
    configs: dict[str, list[FindingRun]] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return sum(len(v) for v in self.configs.values())


def _config(opts: dict[str, Any]) -> str:
    return " ".join(f"{k}={opts.get(k)}" for k in CONFIG_KEYS if k in opts)


def explore_file(folder: Path) -> Path | None:
    """The explore.json a folder's page shows: its own (an explore folder), else the newest
    explore below it (``explore/<UTC time>/``: the nightly's), else None."""
    own = folder / EXPLORE_FILE
    if own.is_file():
        return own
    below = sorted(folder.glob(f"explore/*/{EXPLORE_FILE}"))
    return below[-1] if below else None


def build_findings(folder: Path) -> dict[str, Any] | None:
    """The page's ``explore`` block, or None when ``folder`` has no explore (a damaged
    explore.json says so instead of failing the page). Run links are relative to
    ``folder``."""
    path = explore_file(folder)
    if path is None:
        return None
    base = path.parent.relative_to(folder)
    try:
        doc = json.loads(path.read_text())
        runs = list(doc["runs"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return {"error": f"{EXPLORE_FILE} could not be read: {e}"}
    groups: dict[str, FindingGroup] = {}
    for r in runs:
        if not isinstance(r, dict):
            continue
        opts = r.get("options") or {}
        run_dir = (base / r["run_dir"]).as_posix() if r.get("run_dir") else None
        replay = f"{run_dir}/replay.toml" if run_dir and (
            folder / run_dir / "replay.toml").is_file() else None
        for violation, count in sorted((r.get("violations") or {}).items()):
            g = groups.setdefault(violation, FindingGroup(violation))
            g.configs.setdefault(_config(opts), []).append(FindingRun(
                int(r.get("index", 0)), run_dir, int(count),
                ",".join(opts.get("faults") or []) or "none", replay,
                "; ".join(r.get("unknown_reasons") or []) if violation == "unknown" else ""))
    return {"seed": doc.get("seed"), "runs": len(runs), "started_at": doc.get("started_at"),
            "stopped": doc.get("stopped"),
            "findings": sum(1 for r in runs if isinstance(r, dict) and r.get("violations")),
            "covered": doc.get("covered") or {},
            "groups": sorted(groups.values(), key=lambda g: (-g.runs, g.violation))}
