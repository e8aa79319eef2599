"""Test support (real cluster): a run whose faults stay on for minutes, SIGKILLed once they
are all in force — what only a dead-man switch can heal in time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tenacity import Retrying, stop_after_delay, wait_fixed

from tests.run.cli import start


def step(fault: str, target: str, ref: str, extra: str = "") -> str:
    """A scenario step that starts ``fault`` at ``target`` (``extra``: more TOML lines)."""
    return (f'[[scenario.steps]]\naction = "start"\nfault = "{fault}"\n{extra}'
            f'target = "{target}"\nas = "{ref}"\n\n')


def held_scenario(*steps: str) -> str:
    """Scenario ``held``: ``steps``, then ten minutes of nothing."""
    return ('[[scenario]]\nname = "held"\nsummary = "held"\n\n'
            '[scenario.config]\nduration = 600\nrate = 50\n\n' + "".join(steps)
            + '[[scenario.steps]]\naction = "wait"\nseconds = 600\n')


def fault_starts(run_dir: Path) -> list[str]:
    """The kinds of the faults the run has started, sorted."""
    path = run_dir / "history" / "events.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    return sorted(e["kind"] for e in lines if e.get("phase") == "start" and e["kind"] != "phase")


@contextlib.contextmanager
def killed_mid_fault(tmp_path: Path, scenario: str, bootstrap: str, nodes: Path,
                     dead_man_s: float, kinds: list[str]) -> Iterator[None]:
    """Runs ``scenario`` (held_scenario) against the cluster until the faults ``kinds`` have
    all started, yields (the caller looks at them), then SIGKILLs the run's process group."""
    scenarios = tmp_path / "held.toml"
    scenarios.write_text(scenario)
    out = tmp_path / "runs"
    proc = start(["run", "--scenario-file", str(scenarios), "--scenario", "held",
                  "--bootstrap-servers", bootstrap, "--nodes", str(nodes),
                  "--dead-man", str(dead_man_s), "--no-check", "--no-report",
                  "--out", str(out)],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for attempt in Retrying(stop=stop_after_delay(180), wait=wait_fixed(0.5), reraise=True):
            with attempt:
                assert proc.poll() is None, "the run ended before its faults were on"
                assert fault_starts(out / "latest") == sorted(kinds)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
