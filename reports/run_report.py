"""``render_run(run_dir)``: one run directory → ``report.html`` and ``junit.xml``.

The report is a pure function of the run directory. It reads the checker's results as they are
(verdict, counts, allowed or not) and reads the history only to draw: per-second throughput and
latency when the checker did not provide them, leadership and ISR samples, and the records near
each example for the offset maps.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from markupsafe import Markup

from contract.anomalies import MEANINGS
from contract.results import Results, shape_problem

from . import offset_map, plots
from .cluster_state import load_cluster_state
from .datasets import column_bounds, count_rows, load_events, load_json
from .examples import ACK_KEY, format_example
from .junit import junit_xml, write_junit
from .page import render_template, write_atomic
from .summary import AnomalyRow, anomaly_rows, settings, verdict
from .throughput import from_checker, from_history
from .timeline import Timeline, build_timeline

MAX_LOG_LINKS = 40


class ReportError(Exception):
    """The path is not something a report can be made of (e.g. no run.json)."""


@dataclass(frozen=True)
class FileLink:
    """A link from the report to a file of the run directory."""

    href: str
    label: str
    size: str
    note: str = ""


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _file_links(run_dir: Path) -> tuple[list[FileLink], list[FileLink]]:
    history = []
    for name, note in (("run.json", "configuration"), ("results.json", "checker output"),
                       ("junit.xml", "JUnit XML"), ("history/writes.parquet", "produce attempts"),
                       ("history/reads.parquet", "records read"),
                       ("history/events.jsonl", "faults and phases"),
                       ("history/observations.parquet", "leader / ISR samples")):
        p = run_dir / name
        if p.exists() or name == "junit.xml":
            rows = ""
            if name.endswith(".parquet"):
                rows = f"{count_rows(p):,} rows · "
            size = _human_size(_size_of(p)) if p.exists() else ""
            history.append(FileLink(name + ("/" if p.is_dir() else ""), name, rows + size, note))
    logs = []
    logs_dir = run_dir / "logs"
    if logs_dir.is_dir():
        for p in sorted(x for x in logs_dir.rglob("*") if x.is_file())[:MAX_LOG_LINKS]:
            rel = p.relative_to(run_dir).as_posix()
            logs.append(FileLink(rel, rel.removeprefix("logs/"), _human_size(p.stat().st_size)))
    return history, logs


def _anomaly_series(
    rows: list[AnomalyRow], tl: Timeline, bucket_s: float,
) -> tuple[list[float], dict[str, list[float]], float, str]:
    """Lost/unseen per bucket, from the examples the checker kept (when each was acked)."""
    kinds = ("lost", "unseen")
    nb = max(1, int(tl.duration_s // bucket_s) + 1)
    t = [i * bucket_s for i in range(nb)]
    counts = {k: [0.0] * nb for k in kinds}
    shown = total = 0
    for r in rows:
        if r.kind not in kinds:
            continue
        total += r.count
        for ex in r.examples:
            if isinstance(ex.get(ACK_KEY), int):
                i = min(max(int(tl.rel_s(ex[ACK_KEY]) // bucket_s), 0), nb - 1)
                counts[r.kind][i] += 1
                shown += 1
    note = (f"Drawn from the {shown} examples the checker kept, of {total:,} (results.json has "
            "no per-second series of them)." if shown < total else "")
    return t, counts, bucket_s, note


def build_context(run_dir: Path) -> dict[str, Any]:
    """Everything the run template shows, computed from the run directory."""
    t_start = time.perf_counter()
    run = load_json(run_dir / "run.json")
    if run is None:
        raise ReportError(f"{run_dir} is not a run directory (no readable run.json)")
    results = load_json(run_dir / "results.json")
    if results is not None and (problem := shape_problem(results)) is not None:
        raise ReportError(f"{run_dir / 'results.json'} is damaged: {problem}")
    history = run_dir / "history"
    events = load_events(history / "events.jsonl")
    bounds = [b for b in (column_bounds(history / "writes.parquet", "invoke_ns"),
                          column_bounds(history / "writes.parquet", "complete_ns")) if b]
    tl = build_timeline(events, min((b[0] for b in bounds), default=None),
                        max((b[1] for b in bounds), default=None))
    duration = max(tl.duration_s, 1.0)
    rows = anomaly_rows(results)
    v = verdict(results, rows)
    bands = plots.fault_bands(tl)
    series = from_checker(cast("Results | None", results), tl.t0_ns) or from_history(
        history / "writes.parquet", tl.t0_ns, duration)
    focus = {(str(ex.get("topic", "")), int(ex["partition"])) for r in rows if r.count
             for ex in r.examples if ex.get("partition") is not None}
    state = load_cluster_state(history / "observations.parquet", tl.t0_ns, duration, focus)
    at, acounts, abucket, anote = _anomaly_series(rows, tl, series.bucket_s)
    maps = offset_map.plan_maps(rows)
    offset_map.fill_maps(maps, history, rows)
    history_links, log_links = _file_links(run_dir)
    stats = {k: None for k in ("reads", "duration_s", "ack_rate_per_s", "unavailable_s",
                                "drain_complete")} | ((results or {}).get("stats") or {})
    header = {k: run.get(k) or "" for k in ("scenario", "run_id", "started_at")}
    return {
        "run": run,
        "header": header,
        "results": results,
        "title": f"{run.get('scenario', 'run')} · {run.get('run_id') or run_dir.name}",
        "verdict": v,
        "settings": settings(run),
        "stats": stats,
        "writes": stats.get("writes") or {},
        "anomalies": rows,
        "meaning": MEANINGS,
        "examples": {r.kind: [format_example(ex, tl) for ex in r.examples] for r in rows},
        "timeline": tl,
        "faults": list(enumerate(tl.faults, 1)),
        "plots": {
            "faults": plots.fault_lane(tl),
            "throughput": plots.throughput(series, bands, duration),
            "latency": plots.latency(series, bands, duration),
            "leadership": plots.leadership(state, bands, duration),
            "anomalies": plots.anomalies_over_time(at, acounts, abucket, bands, duration),
        },
        "anomalies_note": anote,
        "series": series,
        "cluster": state,
        "offset_maps": [(m, offset_map.render(m)) for m in maps],
        "history_links": history_links,
        "log_links": log_links,
        "expectations": (results or {}).get("expectations"),
        "mechanism": (results or {}).get("mechanism"),
        "pipeline": (results or {}).get("pipeline"),
        "generated_at": datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "build_seconds": time.perf_counter() - t_start,
        "Markup": Markup,
    }


def render_run(run_dir: str | os.PathLike[str]) -> Path:
    """Write ``report.html`` and ``junit.xml`` into the run directory; return the report path.

    Raises ``ReportError`` when ``run_dir`` has no readable ``run.json``.
    """
    run_dir = Path(run_dir)
    try:
        ctx = build_context(run_dir)
    except (TypeError, KeyError, AttributeError, ValueError, IndexError) as e:
        # a value of the wrong type deeper than the shape check looks (an example's field):
        # the run directory is damaged; say which error, never a traceback
        raise ReportError(f"{run_dir} is a damaged run directory "
                          f"({type(e).__name__}: {e})") from None
    report = run_dir / "report.html"
    write_atomic(report, render_template("run.html.j2", ctx))
    write_junit(run_dir / "junit.xml",
                junit_xml(ctx["run"], ctx["results"], ctx["anomalies"], ctx["verdict"]))
    return report
