"""A small SVG plotting kit: frames, nice ticks, lines, bands, lanes and legends.

Why hand-made SVG rather than a plotting library: the report must open offline and stay a few
MB for a 10M-write run. Plotly or Vega would inline 1-3 MB of JavaScript into every report;
matplotlib's SVG is verbose (a path per glyph) and slow to produce, and is not installed here.
The plots we need are simple — time series, shaded windows, lanes and a grid of cells — and
drawing them directly gives crisp, styleable (CSS classes), searchable text, native ``<title>``
tooltips with no script, and output whose size we control by downsampling first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

from markupsafe import Markup

# One left/right margin for every time plot, so that their time axes line up on the page.
LEFT, RIGHT = 96, 16
WIDTH = 1100


def esc(text: object) -> str:
    """Text escaped for SVG content and attribute values."""
    return escape(str(text), quote=True)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 × 10^k steps) covering [lo, hi]."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    v = first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten covering [lo, hi] (lo > 0) for a logarithmic axis."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0**k for k in range(a, b + 1)]


def fmt_num(v: float) -> str:
    """A compact number: 1.2k, 3M, 0.25, 12."""
    a = abs(v)
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.3g}{suffix}"
    if a == 0 or a >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def fmt_seconds(v: float) -> str:
    """An axis label for seconds since the start: 90 -> 1:30, 12.5 -> 12.5s."""
    if abs(v) >= 60 and float(v).is_integer():
        m, s = divmod(int(v), 60)
        return f"{m}:{s:02d}"
    return f"{fmt_num(v)}s"


@dataclass
class Frame:
    """Maps data coordinates to pixels inside a plot's margins."""

    x0: float
    x1: float
    y0: float
    y1: float
    height: int
    width: int = WIDTH
    top: int = 18
    bottom: int = 26
    ylog: bool = False

    @property
    def inner_w(self) -> float:
        return self.width - LEFT - RIGHT

    @property
    def inner_h(self) -> float:
        return self.height - self.top - self.bottom

    def x(self, v: float) -> float:
        """Pixel x of data value ``v`` (clamped to the plot area)."""
        span = (self.x1 - self.x0) or 1.0
        return LEFT + min(max((v - self.x0) / span, 0.0), 1.0) * self.inner_w

    def y(self, v: float) -> float:
        """Pixel y of data value ``v`` (clamped)."""
        if self.ylog:
            lo, hi = math.log10(self.y0), math.log10(self.y1)
            v = math.log10(max(v, self.y0))
        else:
            lo, hi = self.y0, self.y1
        span = (hi - lo) or 1.0
        frac = min(max((v - lo) / span, 0.0), 1.0)
        return self.top + (1 - frac) * self.inner_h


@dataclass
class Svg:
    """An SVG document built from parts; ``render()`` gives markup safe to inline."""

    width: int
    height: int
    title: str = ""
    css_class: str = "plot"
    parts: list[str] = field(default_factory=list)

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def render(self) -> Markup:
        head = (
            f'<svg class="{esc(self.css_class)}" viewBox="0 0 {self.width} {self.height}" '
            f'width="{self.width}" height="{self.height}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg" aria-label="{esc(self.title)}">'
        )
        return Markup(head + "".join(self.parts) + "</svg>")


def path_d(frame: Frame, xs: Sequence[float], ys: Sequence[float | None]) -> str:
    """Polyline path data; a None y breaks the line (a gap in the data)."""
    out: list[str] = []
    pen_up = True
    for x, y in zip(xs, ys, strict=True):
        if y is None or (isinstance(y, float) and math.isnan(y)):
            pen_up = True
            continue
        out.append(f"{'M' if pen_up else 'L'}{frame.x(x):.1f},{frame.y(y):.1f}")
        pen_up = False
    return "".join(out)


def axes(svg: Svg, f: Frame, y_label: str, x_ticks: Iterable[float] | None = None,
         y_fmt: Callable[[float], str] = fmt_num, show_x_labels: bool = True,
         y_ticks: bool = True) -> None:
    """Grid lines, tick labels and the y-axis title (lanes pass ``y_ticks=False``)."""
    yt = (log_ticks(f.y0, f.y1) if f.ylog else nice_ticks(f.y0, f.y1, 4)) if y_ticks else []
    for v in yt:
        py = f.y(v)
        svg.add(f'<line class="grid" x1="{LEFT}" x2="{f.width - RIGHT}" y1="{py:.1f}" '
                f'y2="{py:.1f}"/><text class="tick" x="{LEFT - 6}" y="{py + 4:.1f}" '
                f'text-anchor="end">{esc(y_fmt(v))}</text>')
    for v in x_ticks if x_ticks is not None else nice_ticks(f.x0, f.x1, 10):
        px = f.x(v)
        svg.add(f'<line class="grid" x1="{px:.1f}" x2="{px:.1f}" y1="{f.top}" '
                f'y2="{f.height - f.bottom}"/>')
        if show_x_labels:
            svg.add(f'<text class="tick" x="{px:.1f}" y="{f.height - f.bottom + 15}" '
                    f'text-anchor="middle">{esc(fmt_seconds(v))}</text>')
    svg.add(f'<rect class="frame" x="{LEFT}" y="{f.top}" width="{f.inner_w:.1f}" '
            f'height="{f.inner_h:.1f}"/>')
    if y_label:
        cy = f.top + f.inner_h / 2
        svg.add(f'<text class="axis-title" transform="translate(40,{cy:.1f}) rotate(-90)" '
                f'text-anchor="middle">{esc(y_label)}</text>')


@dataclass(frozen=True)
class Band:
    """A shaded time window: a fault (numbered, coloured by kind) or a phase."""

    start: float
    end: float
    label: str
    tooltip: str
    css: str


def bands(svg: Svg, f: Frame, items: Sequence[Band], labelled: bool = True) -> None:
    """Shade windows across the plot's height, each with its short label at the top."""
    for b in items:
        x0, x1 = f.x(b.start), f.x(b.end)
        w = max(x1 - x0, 1.5)  # an instant still shows as a thin bar
        svg.add(f'<g class="band {esc(b.css)}"><title>{esc(b.tooltip)}</title>'
                f'<rect x="{x0:.1f}" y="{f.top}" width="{w:.1f}" height="{f.inner_h:.1f}"/>')
        if labelled:
            svg.add(f'<text class="band-label" x="{x0 + 2:.1f}" y="{f.top + 10}">'
                    f'{esc(b.label)}</text>')
        svg.add("</g>")


def legend(svg: Svg, f: Frame, items: Sequence[tuple[str, str]]) -> None:
    """A one-line legend above the plot, right-aligned: (css class, text) pairs."""
    x = f.width - RIGHT
    for css, text in reversed(items):
        w = 7 * len(text) + 22
        x -= w
        svg.add(f'<g class="legend {esc(css)}"><rect x="{x:.1f}" y="3" width="12" '
                f'height="10" rx="2"/><text x="{x + 16:.1f}" y="12">{esc(text)}</text></g>')


def empty(width: int, height: int, message: str) -> Markup:
    """A placeholder plot that says why there is nothing to draw."""
    svg = Svg(width, height, message, "plot empty")
    svg.add(f'<rect class="frame" x="{LEFT}" y="8" width="{width - LEFT - RIGHT}" '
            f'height="{height - 16}"/><text class="empty-msg" x="{width / 2:.0f}" '
            f'y="{height / 2 + 4:.0f}" text-anchor="middle">{esc(message)}</text>')
    return svg.render()
