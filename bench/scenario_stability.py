"""Runs each replication scenario several times and prints the verdicts side by side, to
see whether the scripted mechanisms are reached reliably and the outcomes repeat.

    .venv/bin/python -m bench.scenario_stability [--runs 3] [--kafka-version 3.9.1]
        [--scenario NAME ...] [--out /tmp/stability]

One run at a time (the machine is shared). Each cell: valid / expectations met / mechanism
observed, then lost count and the longest stretch without acknowledgements.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from pathlib import Path
from typing import Any

from chaos.orchestrator import run
from chaos.scenarios import SCENARIOS
from chaos.scenarios.replication import SCENARIOS as REPLICATION

#: Variants worth running besides each scenario's defaults.
VARIANTS: dict[str, list[dict[str, Any]]] = {"unclean-election": [{}, {"unclean": False}]}


def label(name: str, overrides: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in overrides.items())
    return f"{name}[{extra}]" if extra else name


def one_run(name: str, overrides: dict[str, Any], out: Path) -> str:
    """One run, summarised in a cell; the run's own progress goes to a log file."""
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
        return f"ERROR {outcome.error} ({secs:.0f}s)"
    exp = res.get("expectations", {}).get("met")
    mech = res.get("mechanism", {}).get("observed")
    lost = res["anomalies"]["lost"]["count"]
    unav = res["stats"].get("unavailable_s", 0.0)
    return (f"valid={res['valid']} exp={'ok' if exp else 'NO'} mech={'ok' if mech else 'NO'} "
            f"lost={lost} unav={unav:.1f}s ({secs:.0f}s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kafka-version", default=None)
    ap.add_argument("--scenario", action="append", default=None,
                    help="a scenario name (repeatable; default: all replication scenarios)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/scenario-stability"))
    args = ap.parse_args(argv)
    names = args.scenario or [s.name for s in REPLICATION]
    rows: list[tuple[str, list[str]]] = []
    for name in names:
        for overrides in VARIANTS.get(name, [{}]):
            ov = {**overrides, "kafka_version": args.kafka_version}
            cells = []
            for i in range(args.runs):
                cell = one_run(name, ov, args.out)
                print(f"{label(name, overrides)} run {i + 1}: {cell}", flush=True)
                cells.append(cell)
            rows.append((label(name, overrides), cells))
    print(f"\nKafka {args.kafka_version or 'default'}, {args.runs} runs each:")
    width = max(len(r[0]) for r in rows)
    for lab, cells in rows:
        print(f"{lab:<{width}}  " + "  |  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
