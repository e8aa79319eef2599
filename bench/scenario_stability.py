"""Runs each catalogue scenario several times in a row and prints the verdicts side by side,
to see whether the scripted mechanisms are reached reliably and the outcomes repeat.

    .venv/bin/python -m bench.scenario_stability [--runs 3] [--kafka-version 3.9.1]
        [--scenario NAME ...] [--out /tmp/stability]
        [--figures docs/figures/scenario-stability.md | --no-figures]

One run at a time (the machine is shared). Each cell: valid / expectations met / mechanism
observed, then lost count, the longest stretch without acknowledgements and the wall time
of the whole run (cluster start to report), and how many anomaly records were excused by a
proof or named by an accepted known bug. A row is ``stable`` when every run gave the same
(valid, expectations, mechanism) triple and it was the expected one; the exit code is 1 if
any row is not, or if any run took longer than --budget seconds. The table, with the machine,
the versions and the date, replaces its section of ``--figures`` (one section per Kafka
version and set of scenarios; reports/figures.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from pathlib import Path
from typing import Any

from compose.image import DEFAULT_KAFKA_VERSION
from reports.figures import FIGURES, write_figure
from runner.orchestrator import run
from scenarios import SCENARIOS

#: Variants worth running besides each scenario's defaults.
VARIANTS: dict[str, list[dict[str, Any]]] = {"unclean-election": [{}, {"unclean": False}]}


def label(name: str, overrides: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in overrides.items())
    return f"{name}[{extra}]" if extra else name


def one_run(name: str, overrides: dict[str, Any], out: Path) -> tuple[str, str, float]:
    """One run: (verdict key, summary cell, wall seconds); the run's own progress goes to a
    log file."""
    sc = SCENARIOS[name]
    cfg = sc.run_config(out=str(out), report=False, **overrides)
    t0 = time.monotonic()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        outcome = run(cfg, sc, progress=print)
    (out / f"{name}.progress.log").open("a").write(buf.getvalue())
    secs = time.monotonic() - t0
    res = outcome.results
    if res is None:
        return "error", f"ERROR {outcome.error} ({secs:.0f}s)", secs
    exp = res.get("expectations", {}).get("met")
    mech = res.get("mechanism", {}).get("observed")
    lost = res["anomalies"]["lost"]["count"]
    unav = res["stats"].get("unavailable_s", 0.0)
    key = f"valid={res['valid']} exp={'ok' if exp else 'NO'} mech={'ok' if mech else 'NO'}"
    return key, f"{key} lost={lost} {proofs(res)} unav={unav:.1f}s ({secs:.0f}s)", secs


def proofs(res: dict[str, Any]) -> str:
    """How many anomaly records the run's excuses proved away and how many an accepted known
    bug named, over every kind, with the bugs' ids: ``excused=971 accepted=3
    (librdkafka#4953 3)``."""
    kinds = res["anomalies"].values()
    excused = sum(int(a.get("excused", 0)) for a in kinds)
    accepted = sum(int(a.get("accepted", 0)) for a in kinds)
    named: dict[str, int] = {}
    for a in kinds:
        for bug, n in (a.get("known_bugs") or {}).items():
            named[bug] = named.get(bug, 0) + int(n)
    tags = ", ".join(f"{b} {n}" for b, n in sorted(named.items()))
    return f"excused={excused} accepted={accepted}" + (f" ({tags})" if tags else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kafka-version", default=None)
    ap.add_argument("--scenario", action="append", default=None,
                    help="a scenario name (repeatable; default: all replication scenarios)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/scenario-stability"))
    ap.add_argument("--budget", type=float, default=180.0,
                    help="seconds a run may take, cluster start to report (default 180)")
    ap.add_argument("--figures", type=Path, default=FIGURES / "scenario-stability.md",
                    help="the figure file whose section this rewrites")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args(argv)
    names = args.scenario or sorted(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario {unknown[0]!r}")
    rows: list[tuple[str, str, list[str]]] = []
    slowest = 0.0
    for name in names:
        for overrides in VARIANTS.get(name, [{}]):
            ov = {**overrides, "kafka_version": args.kafka_version}
            keys, cells = [], []
            for i in range(args.runs):
                key, cell, secs = one_run(name, ov, args.out)
                slowest = max(slowest, secs)
                print(f"{label(name, overrides)} run {i + 1}: {cell}", flush=True)
                keys.append(key)
                cells.append(cell)
            good = len(set(keys)) == 1 and keys[0].endswith("exp=ok mech=ok")
            rows.append((label(name, overrides), "stable" if good else "UNSTABLE", cells))
    print(f"\nKafka {args.kafka_version or DEFAULT_KAFKA_VERSION}, {args.runs} runs each "
          f"(slowest run {slowest:.0f}s, budget {args.budget:.0f}s):")
    width = max(len(r[0]) for r in rows)
    for lab, verdict, cells in rows:
        print(f"{lab:<{width}}  {verdict:<8}  " + "  |  ".join(cells))
    ok = all(v == "stable" for _, v, _ in rows) and slowest <= args.budget
    if not args.no_figures:
        print(f"written {write_stability_figure(args, names, rows, slowest)}")
    return 0 if ok else 1


def write_stability_figure(args: argparse.Namespace, names: list[str],
                           rows: list[tuple[str, str, list[str]]], slowest: float) -> Path:
    """The table as its section of the figure file: one section per Kafka version, plus the
    scenarios when only some were run."""
    version = args.kafka_version or DEFAULT_KAFKA_VERSION
    every = sorted(SCENARIOS)
    section = f"kafka-{version}" + ("" if names == every else "-" + "-".join(names))
    command = "python -m bench.scenario_stability" + "".join(
        [f" --runs {args.runs}" if args.runs != 3 else "",
         f" --kafka-version {args.kafka_version}" if args.kafka_version else "",
         *[f" --scenario {n}" for n in names if names != every]])
    return write_figure(
        args.figures, section, heading="Scenario stability",
        title=f"Kafka {version}, {args.runs} runs of each",
        command=command, versions_extra={"kafka": version},
        columns=["scenario", "row", "runs: verdict, expectations, mechanism, lost, "
                 "records excused and accepted (named known bugs), longest unavailability "
                 "(wall time)"],
        rows=[(f"`{lab}`", verdict, " / ".join(cells)) for lab, verdict, cells in rows],
        notes=f"One run at a time; the slowest took {slowest:.0f} s end to end (budget "
              f"{args.budget:.0f} s). A row is stable when its runs agree on verdict, "
              "expectations and mechanism and these are the expected ones.")


if __name__ == "__main__":
    raise SystemExit(main())
