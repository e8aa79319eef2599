"""Benchmark: the report of a 10M-write synthetic run — its size and the time to render it.

    python bench/report_bench.py [--writes 10000000] [--dir /tmp/kc-report-bench] [--browser]
                                 [--figures docs/figures/report-bench.md | --no-figures]

The synthetic run (``tests.support.synthetic``) is written once and reused while its
spec is the same; rendering is timed separately (best of ``--repeat``), and ``--browser`` also times
opening the report in headless Chromium. The figures, with the machine, the versions and the
date, replace that size's section of ``--figures`` (reports/figures.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports import render_run  # noqa: E402
from reports.figures import FIGURES, write_figure  # noqa: E402
from tests.support.synthetic import PlannedFault, SyntheticSpec, write_synthetic_run  # noqa: E402


def bench_spec(writes: int) -> SyntheticSpec:
    """A long run at 5k writes/s over 12 partitions, a fault every 100 s, acks=1 losing some."""
    duration = max(60.0, writes / 5000)
    kinds = ["kill", "pause", "partition"]
    faults = [PlannedFault(kinds[i % 3], [1 + i % 3], t, t + 25)
              for i, t in enumerate(range(40, int(duration) - 40, 100))]
    return SyntheticSpec(scenario="acks1-leader-failover", writes=writes, duration_s=duration,
                         partitions=12, producers=8, acks="1", lost=2_000, duplicate=40,
                         inconsistent=10, seed=42, faults=faults, part_rows=1_000_000)


def ensure_run(spec: SyntheticSpec, run_dir: Path) -> float:
    """Write the synthetic run unless the same spec is already there; seconds spent writing."""
    marker = run_dir / "synthetic-spec.json"
    wanted = json.dumps(asdict(spec), sort_keys=True)
    if marker.exists() and marker.read_text() == wanted and (run_dir / "results.json").exists():
        return 0.0
    t = time.perf_counter()
    write_synthetic_run(spec, run_dir)
    marker.write_text(wanted)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=10_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kc-report-bench"))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--browser", action="store_true", help="also time opening it in Chromium")
    ap.add_argument("--figures", type=Path, default=FIGURES / "report-bench.md",
                    help="the figure file whose section for this size this rewrites")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args(argv)
    run_dir = args.dir / f"run-{args.writes}"
    spec = bench_spec(args.writes)
    gen_s = ensure_run(spec, run_dir)
    history_mb = sum(p.stat().st_size for p in (run_dir / "history").rglob("*")
                     if p.is_file()) / 1e6
    times, cpu = [], []
    for _ in range(max(1, args.repeat)):
        t, c = time.perf_counter(), time.process_time()
        report = render_run(run_dir)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)  # honest on a shared, loaded machine
    size = report.stat().st_size
    print(f"run:          {run_dir} ({args.writes:,} writes, history {history_mb:,.0f} MB"
          + (f", generated in {gen_s:.1f} s)" if gen_s else ", reused)"))
    print(f"report:       {report}")
    print(f"report size:  {size:,} bytes ({size / 1e6:.2f} MB)")
    print(f"render time:  {min(times):.2f} s (best of {len(times)}: "
          + ", ".join(f"{x:.2f}" for x in times) + f"); CPU {min(cpu):.2f} s, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    junit = (run_dir / 'junit.xml').stat().st_size
    print(f"junit.xml:    {junit:,} bytes")
    rows: list[list[object]] = [
        ["history", f"{history_mb:,.0f} MB"],
        ["report.html", f"{size / 1e6:.2f} MB"],
        [f"render time (best of {len(times)})", f"{min(times):.2f} s"],
        ["render CPU", f"{min(cpu):.2f} s"],
        ["junit.xml", f"{junit:,} bytes"],
    ]
    if args.browser:
        from tests.reports.browser import Chromium

        with Chromium() as browser:
            load = browser.open(report)
            print(f"browser load: {load.load_seconds:.2f} s, console errors "
                  f"{len(load.errors)}, network requests {len(load.foreign_requests)}")
            rows.append(["load in headless Chromium", f"{load.load_seconds:.2f} s "
                         f"({len(load.errors)} console errors, "
                         f"{len(load.foreign_requests)} network requests)"])
    if not args.no_figures:
        command = (f"python -m bench report -- --writes {args.writes} --repeat {args.repeat}"
                   + (" --browser" if args.browser else ""))
        written = write_figure(args.figures, f"{args.writes}-writes",
                               title=f"The report of a {args.writes:,}-write run",
                               command=command, heading="Report benchmark",
                               columns=["what", "measured"], rows=rows,
                               notes="A synthetic acks=1 run (`tests.support.synthetic`) "
                                     "over 12 partitions with 8 producers and a fault every "
                                     "100 s; rendering is `reports.render_run`.")
        print(f"written {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
