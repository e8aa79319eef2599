"""The run report's time plots: faults, throughput, latency, leadership/ISR and anomalies.

Every plot spans the whole run on the same x axis (seconds since the start, same margins), and
shades the same fault windows, numbered F1, F2, … as in the fault lane on top: reading down the
page, an effect lines up under its cause.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup

from contract.faults import FAULTS, fault_css

from . import svg
from .cluster_state import ClusterState
from .throughput import WriteSeries
from .timeline import Timeline

BROKER_COLORS = ("#2563eb", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569")


def fault_bands(tl: Timeline) -> list[svg.Band]:
    """The run's fault windows as numbered, kind-coloured bands."""
    out = []
    for i, f in enumerate(tl.faults, 1):
        a, b = tl.rel_s(f.start_ns), tl.rel_s(f.end_ns)
        until = f"{b:.1f}s" if f.ended else "the end of the run (never ended)"
        tip = f"F{i}: {f.label} from {a:.1f}s to {until}"
        out.append(svg.Band(a, b, f"F{i}", tip, fault_css(f.kind)))
    for e in tl.instants:
        t = tl.rel_s(e["ts_ns"])
        label = f"{e.get('kind')} {','.join(map(str, e.get('targets') or []))}".strip()
        out.append(svg.Band(t, t, "", f"{label} at {t:.1f}s", fault_css(str(e.get("kind")))))
    return out


def fault_lane(tl: Timeline) -> Markup:
    """A Gantt chart: the run's phases, then one row per fault kind and target."""
    rows: list[tuple[str, list[int]]] = []
    index: dict[str, int] = {}
    for i, f in enumerate(tl.faults):
        if f.label not in index:
            index[f.label] = len(rows)
            rows.append((f.label, []))
        rows[index[f.label]][1].append(i)
    row_h = 18
    height = 30 + row_h * (len(rows) + len(tl.calls) + 1) + 24
    frame = svg.Frame(0, max(tl.duration_s, 1e-9), 0, 1, height, top=22)
    s = svg.Svg(frame.width, height, "faults and phases over time", "plot lane")
    svg.axes(s, frame, "", y_ticks=False)
    y = frame.top + 3
    for p in tl.phases:
        x0, x1 = frame.x(tl.rel_s(p.start_ns)), frame.x(tl.rel_s(p.end_ns))
        s.add(f'<g class="phase ph-{svg.esc(p.name)}"><title>{svg.esc(p.name)}: '
              f'{tl.rel_s(p.start_ns):.1f}s – {tl.rel_s(p.end_ns):.1f}s</title>'
              f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{row_h - 4}"/>'
              f'<text x="{x0 + 3:.1f}" y="{y + 11}">{svg.esc(p.name) if x1 - x0 > 40 else ""}'
              "</text></g>")
    s.add(f'<text class="lane-label" x="{svg.LEFT - 6}" y="{y + 11}" text-anchor="end">'
          "phases</text>")
    for r, (label, fault_ids) in enumerate(rows, 1):
        yr = y + r * row_h
        s.add(f'<text class="lane-label" x="{svg.LEFT - 6}" y="{yr + 11}" text-anchor="end">'
              f"{svg.esc(label[:14])}</text>")
        for i in fault_ids:
            f = tl.faults[i]
            x0, x1 = frame.x(tl.rel_s(f.start_ns)), frame.x(tl.rel_s(f.end_ns))
            css = fault_css(f.kind) + ("" if f.ended else " open")
            s.add(f'<g class="fault {css}"><title>F{i + 1}: {svg.esc(f.label)} '
                  f'{tl.rel_s(f.start_ns):.1f}s – {tl.rel_s(f.end_ns):.1f}s'
                  f'{"" if f.ended else " (never ended)"}</title><rect x="{x0:.1f}" y="{yr}" '
                  f'width="{max(x1 - x0, 2):.1f}" height="{row_h - 4}" rx="2"/>'
                  f'<text x="{x0 + 3:.1f}" y="{yr + 11}">F{i + 1}</text></g>')
    for r, c in enumerate(tl.calls, len(rows) + 1):  # hung client calls, one row each
        yr = y + r * row_h
        x0, x1 = frame.x(tl.rel_s(c.start_ns)), frame.x(tl.rel_s(c.end_ns))
        s.add(f'<text class="lane-label" x="{svg.LEFT - 6}" y="{yr + 11}" text-anchor="end">'
              f"{svg.esc(c.targets[0][:6])} {svg.esc(c.targets[1][:7])}</text>"
              f'<g class="fault hung-call{"" if c.ended else " open"}"><title>hung call: '
              f'{svg.esc(c.targets[0])} {svg.esc(c.targets[1])}() '
              f'{tl.rel_s(c.start_ns):.1f}s – {tl.rel_s(c.end_ns):.1f}s'
              f'{"" if c.ended else " (never returned)"}</title><rect x="{x0:.1f}" y="{yr}" '
              f'width="{max(x1 - x0, 2):.1f}" height="{row_h - 4}" rx="2"/></g>')
    shown = {f.kind for f in tl.faults}
    legend: dict[str, str] = {}  # one swatch per colour: kill and stop share one
    for kind, spec in FAULTS.items():
        if kind in shown:
            legend.setdefault(spec.css, kind)
    legend_items = list(legend.items())
    svg.legend(s, frame, legend_items)
    return s.render()


def _max(values: Sequence[float | None]) -> float:
    return max((v for v in values if v is not None and not math.isnan(v)), default=0.0)


def throughput(series: WriteSeries, bands: list[svg.Band], duration_s: float) -> Markup:
    """Acknowledged writes/s (area) over failed and unknown writes/s (own scale, below)."""
    if series.empty:
        return svg.empty(svg.WIDTH, 120, "no writes recorded")
    top_h, low_h = 190, 90
    s = svg.Svg(svg.WIDTH, top_h + low_h, "acknowledged throughput over time", "plot")
    xs = [t + series.bucket_s / 2 for t in series.t]
    ok = series.rate["ok"]
    f1 = svg.Frame(0, duration_s, 0, max(_max(ok) * 1.1, 1), top_h, bottom=8, top=20)
    svg.bands(s, f1, bands)
    svg.axes(s, f1, "acked / s", show_x_labels=False)
    line = svg.path_d(f1, xs, ok)
    if line:
        base = f1.height - f1.bottom
        s.add(f'<path class="s-ok-area" d="{line}L{f1.x(xs[-1]):.1f},{base}'
              f'L{f1.x(xs[0]):.1f},{base}Z"/><path class="s-ok" d="{line}"/>')
    low_max = max(_max(series.rate["fail"]), _max(series.rate["info"]), 1)
    f2 = svg.Frame(0, duration_s, 0, low_max * 1.15, top_h + low_h, top=top_h + 6)
    svg.bands(s, f2, bands, labelled=False)
    svg.axes(s, f2, "fail·info /s")
    for o in ("info", "fail"):
        s.add(f'<path class="s-{o}" d="{svg.path_d(f2, xs, series.rate[o])}"/>')
    svg.legend(s, f1, [("s-ok", "ok (acknowledged)"), ("s-fail", "fail"), ("s-info", "info")])
    return s.render()


def latency(series: WriteSeries, bands: list[svg.Band], duration_s: float) -> Markup:
    """Write latency percentiles per bucket on a log scale, by outcome."""
    lines = [("ok.p50", "s-ok-p50", "ok p50"), ("ok.p99", "s-ok", "ok p99"),
             ("ok.max", "s-ok-max", "ok max"), ("fail.p99", "s-fail", "fail p99"),
             ("info.p99", "s-info", "info p99")]
    present = [ln for ln in lines if any(v for v in series.latency_ms.get(ln[0], []))]
    if series.empty or not present:
        return svg.empty(svg.WIDTH, 120, "no latency data")
    values = [v for key, _, _ in present for v in series.latency_ms[key] if v and v > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    f = svg.Frame(0, duration_s, lo, hi if hi > lo else lo * 10, 220, ylog=True, top=20)
    s = svg.Svg(f.width, f.height, "write latency over time", "plot")
    svg.bands(s, f, bands)
    svg.axes(s, f, "latency (ms)")
    xs = [t + series.bucket_s / 2 for t in series.t]
    for key, css, _ in present:
        s.add(f'<path class="{css}" d="{svg.path_d(f, xs, series.latency_ms[key])}"/>')
    svg.legend(s, f, [(css, label) for _, css, label in present])
    return s.render()


def leadership(state: ClusterState, bands: list[svg.Band], duration_s: float) -> Markup:
    """Per partition, one thin row per broker: filled while in the ISR, dark while leader."""
    if not state.lanes:
        return svg.empty(svg.WIDTH, 80, "no cluster observations recorded")
    nb = max(len(state.brokers), 1)
    sub, gap = 7, 12
    lane_h = nb * (sub + 1) + gap
    height = 24 + lane_h * len(state.lanes) + 24
    f = svg.Frame(0, duration_s, 0, 1, height, top=22)
    s = svg.Svg(f.width, height, "leader and ISR of each partition over time", "plot lanes")
    svg.bands(s, f, bands)
    svg.axes(s, f, "", y_ticks=False)
    row_of = {b: i for i, b in enumerate(state.brokers)}
    for li, lane in enumerate(state.lanes):
        y0 = f.top + gap / 2 + li * lane_h
        if li:
            ys = y0 - gap / 2
            s.add(f'<line class="lane-sep" x1="{svg.LEFT}" x2="{f.width - svg.RIGHT}" '
                  f'y1="{ys:.1f}" y2="{ys:.1f}"/>')
        s.add(f'<text class="lane-label" x="{svg.LEFT - 6}" y="{y0 + nb * 3.5 + 4:.1f}" '
              f'text-anchor="end">{svg.esc(lane.key[-14:])}</text>')
        for seg in lane.segments:
            x0, x1 = f.x(seg.start_s), f.x(seg.end_s)
            w = max(x1 - x0, 0.8)
            leader = f"broker {seg.leader}" if seg.leader >= 0 else "none (offline)"
            tip = (f"{lane.key} {seg.start_s:.1f}–{seg.end_s:.1f}s: leader {leader}, ISR "
                   f"[{', '.join(map(str, seg.isr))}]"
                   + (f", epoch {seg.epoch}" if seg.epoch is not None else ""))
            s.add(f"<g><title>{svg.esc(tip)}</title>")
            if seg.leader < 0:
                s.add(f'<rect class="offline" x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" '
                      f'height="{nb * (sub + 1) - 1}"/>')
            for b in seg.isr:
                color = BROKER_COLORS[row_of.get(b, 0) % len(BROKER_COLORS)]
                cls = "leader" if b == seg.leader else "in-isr"
                yb = y0 + row_of.get(b, 0) * (sub + 1)
                s.add(f'<rect class="{cls}" x="{x0:.1f}" y="{yb:.1f}" width="{w:.1f}" '
                      f'height="{sub}" fill="{color}"/>')
            if seg.leader >= 0 and seg.leader not in seg.isr:
                yb = y0 + row_of.get(seg.leader, 0) * (sub + 1)
                s.add(f'<rect class="leader-out" x="{x0:.1f}" y="{yb:.1f}" width="{w:.1f}" '
                      f'height="{sub}"/>')
            s.add("</g>")
    items = [(f"b{i % len(BROKER_COLORS)}", f"broker {b}") for i, b in enumerate(state.brokers)]
    svg.legend(s, f, items + [("offline", "no leader")])
    return s.render()


def anomalies_over_time(
    t: list[float], counts: dict[str, list[float]], bucket_s: float,
    bands: list[svg.Band], duration_s: float,
) -> Markup:
    """Bars of lost / unseen records per time bucket (by acknowledgement time)."""
    if not t or not any(any(v) for v in counts.values()):
        return svg.empty(svg.WIDTH, 70, "no lost or unseen records")
    ymax = max(_max(v) for v in counts.values())
    f = svg.Frame(0, duration_s, 0, max(ymax * 1.15, 1), 160, top=20)
    s = svg.Svg(f.width, f.height, "lost and unseen records over time", "plot")
    svg.bands(s, f, bands)
    svg.axes(s, f, "records")
    kinds = [k for k in counts if any(counts[k])]
    bw = max((f.x(bucket_s) - f.x(0)) / max(len(kinds), 1), 1.5)
    for ki, kind in enumerate(kinds):
        for x, v in zip(t, counts[kind], strict=True):
            if v:
                px, py = f.x(x) + ki * bw, f.y(v)
                s.add(f'<rect class="bar-{svg.esc(kind)}" x="{px:.1f}" y="{py:.1f}" '
                      f'width="{bw:.1f}" height="{f.y(0) - py:.1f}"><title>{int(v)} {kind} '
                      f"acknowledged at {x:.0f}–{x + bucket_s:.0f}s</title></rect>")
    svg.legend(s, f, [(f"bar-{k}", k) for k in kinds])
    return s.render()
