"""Benchmark: the PySpark checker against a single-node DuckDB baseline of the same
definitions, on synthetic histories of 1M and 10M writes (and about as many reads).

    python bench/checker_bench.py [--sizes 1000000,10000000] [--dir /tmp/kc-checker-bench]
                                  [--master local[2]] [--engines local[2],sail]
                                  [--out .cache/bench/checker_bench.json]
                                  [--figures docs/figures/checker-bench.md | --no-figures]

The checker runs once per engine (``--engines``: Spark masters, and ``sail`` for the same
PySpark code on Sail), the DuckDB baseline once; the ratio of each engine is against that
baseline, all in the same run on the same history.
Each side runs as its own process, timed from launch to exit (Spark's start included); peak
memory is the largest resident set of that process tree (python + JVM), sampled every
0.1 s. Both must report the same counts. Synthetic histories are generated once per size
and reused until the generator's source changes. Each size's table, with the machine, the
versions and the date, replaces that size's section of ``--figures`` (reports/figures.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.figures import FIGURES, write_figure  # noqa: E402
from tests.support import bench_data  # noqa: E402
from tests.support.bench_data import Spec, generate  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree(pid: int) -> dict[int, tuple[int, float]]:
    """pid -> (resident bytes, CPU seconds) for ``pid`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ppid, pages = int(fields[1]), int(fields[21])
            cpu = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        info[int(entry)] = (pages * PAGE, cpu)
    out, stack = {}, [pid]
    while stack:
        p = stack.pop()
        if p in info:
            out[p] = info[p]
        stack.extend(children.get(p, []))
    return out


def measure(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd``; wall seconds, CPU seconds of its process tree (sampled), peak RSS of the
    tree, the machine's load average meanwhile, and its stdout."""
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    peak = [0]
    cpu: dict[int, float] = {}

    def sample() -> None:
        while proc.poll() is None:
            tree = _tree(proc.pid)
            peak[0] = max(peak[0], sum(r for r, _ in tree.values()))
            for p, (_, c) in tree.items():
                cpu[p] = max(cpu.get(p, 0.0), c)
            time.sleep(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, _ = proc.communicate()
    t.join()
    return {
        "seconds": round(time.monotonic() - started, 2),
        "cpu_seconds": round(sum(cpu.values()), 1),
        "peak_rss_mb": round(peak[0] / 2**20, 1),
        "load_avg": round((load_before + os.getloadavg()[0]) / 2, 1),
        "exit": proc.returncode, "stdout": out,
    }


def _generator_digest() -> str:
    """The generator's source, hashed: a history written by an older generator is stale."""
    return hashlib.sha256(Path(bench_data.__file__).read_bytes()).hexdigest()[:16]


def ensure_data(spec: Spec, run_dir: Path) -> dict[str, int]:
    marker = run_dir / "bench-spec.json"
    made = {"spec": asdict(spec), "generator": _generator_digest()}
    if marker.exists():
        old = json.loads(marker.read_text())
        if {k: old.get(k) for k in made} == made:
            return dict(old["sizes"])
    if run_dir.exists():
        subprocess.run(["rm", "-rf", str(run_dir)], check=True)
    run_dir.mkdir(parents=True)
    sizes = generate(spec, str(run_dir))
    marker.write_text(json.dumps(made | {"sizes": sizes}))
    return sizes


def _engine(run_dir: Path, master: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One checker process on ``master``: its measurement and the results it wrote."""
    m = measure([sys.executable, "-m", "checkers", str(run_dir), "--spark-master", master])
    results = json.loads((run_dir / "results.json").read_text())
    return m, results


def bench_size(n: int, base: Path, engines: list[str]) -> dict[str, Any]:
    run_dir = base / f"w{n}"
    t = time.monotonic()
    sizes = ensure_data(Spec(writes=n), run_dir)
    gen_s = round(time.monotonic() - t, 1)
    duck = measure([sys.executable, str(ROOT / "bench" / "checker_baseline.py"), str(run_dir)])
    baseline = json.loads(duck["stdout"].strip().splitlines()[-1])
    sides: dict[str, Any] = {}
    for master in engines:
        spark, results = _engine(run_dir, master)
        counts = {k: results["anomalies"][k]["count"] for k in baseline["counts"]}
        sides[master] = {k: v for k, v in spark.items() if k != "stdout"} | {
            "checker_seconds": results["checker"]["seconds"],
            "phases": results["checker"].get("phases"), "error": results.get("error"),
            "ratio": round(spark["seconds"] / max(duck["seconds"], 1e-9), 2),
            "cpu_ratio": round(spark["cpu_seconds"] / max(duck["cpu_seconds"], 1e-9), 2),
            "counts_agree": counts == baseline["counts"], "counts": counts,
        }
    return {
        "writes": sizes["writes"], "reads": sizes["reads"], "generate_s": gen_s,
        "engines": sides,
        "duckdb": {k: v for k, v in duck.items() if k != "stdout"}
        | {"query_seconds": baseline["seconds"]},
        "baseline_counts": baseline["counts"],
        "counts_agree": all(e["counts_agree"] for e in sides.values()),
    }


def _rows(r: dict[str, Any]) -> list[str]:
    d = r["duckdb"]
    out = [f"{r['writes']:>11,} writes {r['reads']:>11,} reads | duckdb {d['seconds']:6.1f}s "
           f"{r['writes'] / d['seconds']:>10,.0f} w/s {d['peak_rss_mb']:6.0f} MB "
           f"(load {d['load_avg']})"]
    for master, s in r["engines"].items():
        out.append(f"{'':>11} {master:>18} | {s['seconds']:7.1f}s "
                   f"{r['writes'] / s['seconds']:>10,.0f} w/s {s['peak_rss_mb']:7.0f} MB | "
                   f"x{s['ratio']:.2f} (cpu x{s['cpu_ratio']:.2f}, load {s['load_avg']}) | "
                   f"agree={s['counts_agree']}")
    return out


def write_size_figure(path: Path, r: dict[str, Any], command: str) -> Path:
    """One size's measurements as its section (``<writes>-writes``) of the figure file."""
    d = r["duckdb"]
    rows: list[list[object]] = [["DuckDB (baseline, counts only)", f"{d['seconds']:.1f}", "1.00x",
                                 "1.00x", f"{d['peak_rss_mb']:.0f}", "-"]]
    for master, s in r["engines"].items():
        rows.append([f"checker on `{master}`", f"{s['seconds']:.1f}", f"{s['ratio']:.2f}x",
                     f"{s['cpu_ratio']:.2f}x", f"{s['peak_rss_mb']:.0f}",
                     "yes" if s["counts_agree"] else "**no**"])
    notes = (f"{r['writes']:,} writes and {r['reads']:,} reads (a synthetic history, "
             "`tests.support.bench_data`). Each side is its own process, timed from "
             "launch to exit; peak RSS is the largest resident set of its process tree; the "
             "ratios are against DuckDB's query of the same definitions in the same run.")
    return write_figure(path, f"{r['writes']}-writes", title=f"{r['writes']:,} writes",
                        command=command, heading="Checker benchmark",
                        columns=["engine", "seconds", "vs DuckDB", "CPU vs DuckDB",
                                 "peak RSS (MiB)", "counts agree"], rows=rows, notes=notes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--dir", default="/tmp/kc-checker-bench")
    ap.add_argument("--master", default=None,
                    help="the Spark master of the classic side (default local[2])")
    ap.add_argument("--engines", default="local[2],sail",
                    help="comma-separated checker masters to compare (sail: Sail)")
    ap.add_argument("--out", default=str(ROOT / ".cache" / "bench" / "checker_bench.json"))
    ap.add_argument("--figures", type=Path, default=FIGURES / "checker-bench.md",
                    help="the figure file whose sections this rewrites, one per size")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    if args.master:
        engines = [args.master if e.startswith("local") else e for e in engines]
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        r = bench_size(n, Path(args.dir), engines)
        rows.append(r)
        print("\n".join(_rows(r)), flush=True)
        if any(e["error"] for e in r["engines"].values()):
            print("a checker failed: no figure written", flush=True)
        elif not args.no_figures:
            command = f"python -m bench checker -- --sizes {n} --engines {','.join(engines)}"
            print(f"written {write_size_figure(args.figures, r, command)}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"engines": engines, "cores": os.cpu_count(),
                               "results": rows}, indent=2))
    print(f"written {out}")
    return 0 if all(r["counts_agree"] and not any(e["error"] for e in r["engines"].values())
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
