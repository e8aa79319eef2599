"""The nightly matrix: scenarios and configurations run one after another into one folder,
then a matrix report (``index.html``) and JUnit XML for CI.

    python -m chaos.nightly              # small local matrix: 3 cells of ~30 s and both sides
                                         # of each runnable known bug (make nightly)
    python -m chaos.nightly --full       # CI: every scenario + acks × unclean × faults grid
                                         # + the known bugs
    python -m chaos.nightly --list       # print the cells, run nothing

Runs go to ``<out>/<scenario>/<timestamp>/`` (default ``runs/nightly``); the folder
accumulates nights, so the matrix shows each cell's trend. A cell passes when a scenario's
own expectations are met (or, without any, the verdict is valid); a configuration cell
passes when the verdict is valid — the checker's guarantee model already allows the loss
that acks=1 or unclean election permit, so "valid" means Kafka kept *its* promise.

Exit code: 0 every cell passed, 1 some cell failed, 2 a cell could not be decided (run error,
verdict unknown) and none failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.plugin_matrix import cell_id, cells
from chaos.plugin_result import ChaosResult, Miss, scenario_misses
from contract import exit_codes
from contract.settings import GROUP_PROTOCOLS

RANDOM_FAULTS = "random-faults"  # the row of the matrix's configuration cells

# The grid DESIGN.md's users ask about: acknowledgement × unclean election × fault kind.
FULL_GRID = {"acks": ["1", "all"], "unclean": [False, True],
             "faults": ["kill", "pause", "partition"]}


@dataclass
class Cell:
    """One cell of the nightly matrix: a named scenario, or random faults on a config."""

    scenario: str | None
    axes: dict[str, Any] = field(default_factory=dict)  # what the cell varies: in its name
    settings: dict[str, Any] = field(default_factory=dict)  # the rest (duration, interval)
    bug: str | None = None  # a known-bug cell (scenarios/bugs.py): the entry's id
    side: str = "affected"  # ... and which side of it: affected or fixed

    @property
    def name(self) -> str:
        if self.bug:
            return f"bug:{self.bug}[{self.side}]"
        label = self.scenario or RANDOM_FAULTS
        return f"{label}[{cell_id(self.axes)}]" if self.axes else label

    @property
    def config(self) -> dict[str, Any]:
        return {**self.settings, **self.axes}


@dataclass
class CellOutcome:
    cell: Cell
    result: ChaosResult | None
    seconds: float
    misses: list[Miss] = field(default_factory=list)
    error: str | None = None

    @property
    def status(self) -> str:
        """passed, failed or error (as JUnit and the exit code count them)."""
        if self.error or self.result is None or self.result.results is None:
            return "error"
        if self.misses:
            return "failed"
        return "error" if self.result.valid == "unknown" else "passed"


def bug_cells() -> list[Cell]:
    """Both sides (affected, fixed) of every runnable known-bug catalogue entry (the
    affected one only of a bug nobody fixed)."""
    from scenarios.bugs import BUGS

    return [Cell(b.scenario.name, bug=b.id, side=side) for b in BUGS if b.scenario
            for side in b.sides]


def local_cells(duration: float) -> list[Cell]:
    """A few short cells that show the whole path on one machine in ~6 minutes, then both
    sides of the known bugs (~2 minutes each)."""
    return [
        Cell("safe-config-chaos", settings={"duration": duration}),
        Cell("acks1-leader-failover", settings={"duration": max(duration, 30.0)}),
        Cell(None, {"acks": "1", "unclean": False, "faults": ["kill"]},
             {"min_insync": 1, "fault_interval": 6.0, "duration": duration}),
        *bug_cells(),
    ]


#: Catalogue scenarios with classic groups that the full matrix runs with KIP-848's as well.
KIP848_TOO = ("group-coordinator-chaos", "coordinator-moved-on-assign")


def full_cells(duration: float) -> list[Cell]:
    """Every catalogue scenario at its own length, then the acks × unclean × faults grid."""
    from scenarios import SCENARIOS

    out = [Cell(name) for name in SCENARIOS]
    # the consumer group protocols side by side under coordinator faults (KIP-848), and
    # librdkafka#5586's OffsetFetch with KIP-848 groups too
    out += [Cell(name, {"group_protocol": p}) for name in KIP848_TOO
            for p in GROUP_PROTOCOLS if p != "classic"]
    for c in cells(**FULL_GRID):  # type: ignore[arg-type]
        min_insync = 1 if c["acks"] == "1" else 2
        out.append(Cell(None, c, {"min_insync": min_insync, "fault_interval": 8.0,
                                  "duration": duration}))
    return [*out, *bug_cells()]


def judge(cell: Cell, result: ChaosResult) -> list[Miss]:
    """Why a cell failed: a known bug's promise for its side; else its scenario's
    expectations, else a verdict other than valid."""
    if cell.bug:
        from scenarios.bugs import BUG_BY_ID, as_side, run_misses

        entry = BUG_BY_ID[cell.bug]
        side = as_side(cell.side)
        return [Miss(f"{cell.bug} on {side} ({entry.label(side)})", m)
                for m in run_misses(entry, side, result.results)]
    misses = scenario_misses(result)
    if not misses and result.valid is False:
        misses = [Miss("verdict valid", result.verdict)]
    return misses


def _orchestrator(cell: Cell, out: Path, common: dict[str, Any]) -> ChaosResult:
    from runner.config import RunConfig
    from runner.orchestrator import run
    from runner.progress import Progress
    from scenarios import SCENARIOS

    overrides = {**common, **cell.config, "out": str(out)}
    if cell.bug:  # the entry's pinned version wins over a --kafka-version of every cell
        from scenarios.bugs import BUG_BY_ID, as_side

        entry = BUG_BY_ID[cell.bug]
        side = as_side(cell.side)
        overrides.update(entry.pin(side))
        if entry.axis == "kafka_version":
            overrides.pop("image", None)
    if cell.scenario:
        scenario = SCENARIOS[cell.scenario]
        cfg = scenario.run_config(**overrides)
    else:
        scenario = None
        cfg = RunConfig(scenario=RANDOM_FAULTS).replace(**overrides)
    outcome = run(cfg, scenario, progress=Progress())
    if outcome.interrupted:
        raise KeyboardInterrupt
    return ChaosResult.from_outcome(outcome, label=cell.name)


Runner = Callable[[Cell, Path, dict[str, Any]], ChaosResult]


def run_cells(todo: list[Cell], out: Path, common: dict[str, Any],
              runner: Runner = _orchestrator, say: Callable[[str], None] = print,
              ) -> list[CellOutcome]:
    """Runs the cells in order; Ctrl-C stops after cleanup and keeps what was done."""
    done: list[CellOutcome] = []
    for i, cell in enumerate(todo, 1):
        say(f"\n=== nightly cell {i}/{len(todo)}: {cell.name}")
        t0 = time.monotonic()
        try:
            result = runner(cell, out, common)
            outcome = CellOutcome(cell, result, time.monotonic() - t0, error=result.error)
            if result.results is not None:
                outcome.misses = judge(cell, result)
        except KeyboardInterrupt:
            say("interrupted: writing the matrix of the cells done so far")
            break
        except Exception as e:  # noqa: BLE001 - one broken cell must not stop the night
            outcome = CellOutcome(cell, None, time.monotonic() - t0,
                                  error=f"{type(e).__name__}: {e}")
        done.append(outcome)
        say(f"=== {cell.name}: {outcome.status} in {outcome.seconds:.0f}s"
            + (f"  {outcome.result.summary_line()}" if outcome.result else
               f"  {outcome.error}"))
    return done


def junit(outcomes: list[CellOutcome], seconds: float) -> bytes:
    """One test case per cell; properties carry the verdict, counts and report path."""
    counts = {s: sum(o.status == s for o in outcomes) for s in ("failed", "error")}
    suites = ET.Element("testsuites", name="kafka-chaos nightly")
    suite = ET.SubElement(suites, "testsuite", name="kafka-chaos nightly",
                          tests=str(len(outcomes)), failures=str(counts["failed"]),
                          errors=str(counts["error"]), time=f"{seconds:.1f}")
    for o in outcomes:
        classname = f"nightly.{o.cell.scenario or RANDOM_FAULTS}"
        case = ET.SubElement(suite, "testcase", classname=classname, name=o.cell.name,
                             time=f"{o.seconds:.1f}")
        if o.result is not None:
            props = ET.SubElement(case, "properties")
            for k, v in o.result.properties():
                ET.SubElement(props, "property", name=k, value=v)
        text = o.result.describe() if o.result else (o.error or "")
        if o.status == "failed":
            msg = "; ".join(map(str, o.misses))
            ET.SubElement(case, "failure", message=msg, type="expectation").text = \
                msg + "\n" + text
        elif o.status == "error":
            msg = o.error or f"verdict {o.result.verdict if o.result else 'unknown'}"
            ET.SubElement(case, "error", message=msg, type="undecided").text = text
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def matrix_exit_code(outcomes: list[CellOutcome]) -> int:
    """1 when a cell failed its expectations, 2 when one could not decide (or none ran)."""
    statuses = {o.status for o in outcomes}
    if "failed" in statuses:
        return exit_codes.INVALID
    if "error" in statuses or not outcomes:
        return exit_codes.UNKNOWN
    return exit_codes.VALID


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m chaos.nightly", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  make nightly\n  python -m chaos.nightly --full --duration 60\n"
               "  python -m chaos.nightly --only acks1 --kafka-version 3.9.1\n"
               "  python -m chaos.nightly --list --full")
    ap.add_argument("--full", action="store_true", help="every scenario and the full grid")
    ap.add_argument("--duration", type=float, default=None,
                    help="seconds of workload of random-fault cells (30 local, 60 full)")
    ap.add_argument("--out", type=Path, default=Path("runs/nightly"), help="runs folder")
    ap.add_argument("--junit", type=Path, default=None, help="default <out>/junit.xml")
    ap.add_argument("--only", action="append", default=[],
                    help="run only cells whose name contains this (repeatable)")
    ap.add_argument("--kafka-version", help="Kafka version of every cell")
    ap.add_argument("--image", help="Kafka image of every cell, e.g. apache/kafka:4.1.1")
    ap.add_argument("--seed", type=int, help="seed of every cell")
    ap.add_argument("--list", action="store_true", help="print the cells and exit")
    ap.add_argument("--explore-budget", metavar="T",
                    help="after the matrix, explore for this long (kafka-chaos explore: 90s, "
                    "30m, 2h; default 1h with --full, none otherwise); the matrix page lists "
                    "its findings")
    return ap


def _explore(args: argparse.Namespace) -> str | None:
    """The nightly explore (after the matrix): its one-line summary, or None when off."""
    budget = args.explore_budget or ("1h" if args.full else None)
    if not budget:
        return None
    from datetime import UTC, datetime

    from compose.image import DEFAULT_KAFKA_VERSION, built_versions
    from contract.clients import EVERY_CLIENT
    from runner.explore.commands import budget_seconds
    from runner.explore.search import explore
    from runner.explore.space import Space

    folder = args.out / "explore" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    versions = (args.kafka_version,) if args.kafka_version else (
        tuple(built_versions()) or (DEFAULT_KAFKA_VERSION,))
    space = Space(versions, EVERY_CLIENT)
    done = explore(folder, args.seed or 0, budget_seconds(budget), space)
    return f"explore: {done.runs} run(s), {done.findings} finding(s) ({folder})"


def main(argv: list[str] | None = None, runner: Runner = _orchestrator) -> int:
    args = build_parser().parse_args(argv)
    duration = args.duration or (60.0 if args.full else 30.0)
    todo = full_cells(duration) if args.full else local_cells(duration)
    if args.only:
        todo = [c for c in todo if any(s in c.name for s in args.only)]
    if args.list:
        for c in todo:
            print(c.name)
        return 0
    common = {k: v for k, v in (("kafka_version", args.kafka_version), ("image", args.image),
                                ("seed", args.seed)) if v is not None}
    t0 = time.monotonic()
    outcomes = run_cells(todo, args.out, common, runner)
    explored = _explore(args)
    seconds = time.monotonic() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    junit_path = args.junit or args.out / "junit.xml"
    junit_path.write_bytes(junit(outcomes, seconds))
    index = None
    try:
        from reports import render_matrix

        index = render_matrix(args.out)
    except Exception as e:  # noqa: BLE001 - the JUnit and the runs are still there
        print(f"matrix report failed: {type(e).__name__}: {e}", file=sys.stderr)
    print(f"\nnightly: {len(outcomes)} cell(s) in {seconds / 60:.1f} min")
    for o in outcomes:
        print(f"  {o.status.upper():<7} {o.cell.name:<48} "
              + (o.result.summary_line() if o.result else (o.error or "")))
        for m in o.misses:
            print(f"          {m}")
    if explored:
        print(explored)
    print(f"matrix report: {index}\njunit: {junit_path}")
    return matrix_exit_code(outcomes)


if __name__ == "__main__":
    sys.exit(main())
