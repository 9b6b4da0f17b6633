"""Inline SVG line charts for the offline HTML report (no library, no CDN, every label escaped).

Long series are reduced to at most :data:`MAX_POINTS` points by bucket means so the page stays
small at 10^5 steps; markers (spikes) are drawn at their exact steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

import numpy as np

MAX_POINTS = 1200
WIDTH, HEIGHT = 860, 240
PAD_L, PAD_R, PAD_T, PAD_B = 64, 16, 26, 34
PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


@dataclass
class Line:
    label: str
    y: np.ndarray  # indexed by x = 0..len-1 unless x is given
    color: str
    x: np.ndarray | None = None
    width: float = 1.2
    dash: str | None = None
    opacity: float = 1.0


@dataclass
class Chart:
    title: str
    lines: list[Line] = field(default_factory=list)
    band: tuple[np.ndarray, np.ndarray] | None = None  # lower, upper over x = 0..T-1 (or band_x)
    band_label: str = ""
    band_x: np.ndarray | None = None
    markers: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, label
    log_y: bool = False
    x_label: str = ""


def reduce_points(x: np.ndarray, y: np.ndarray, n: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    m = min(x.size, y.size)  # damaged runs can give a series shorter than its x axis
    x, y = x[:m], y[:m]
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size <= n:
        return x, y
    edges = np.linspace(0, x.size, n + 1).astype(int)
    xs = np.add.reduceat(x, edges[:-1]) / np.diff(edges)
    ys = np.add.reduceat(y, edges[:-1]) / np.diff(edges)
    return xs, ys


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def _fmt(v: float) -> str:
    try:
        v = float(v)
    except OverflowError:  # 10**tick of a damaged series' huge exponent: an int beyond float range
        return "inf"
    if v != 0 and (abs(v) >= 1e4 or abs(v) < 1e-2):
        return f"{v:.1e}"
    return f"{v:.4g}"


def render(chart: Chart) -> str:
    """The chart as an ``<svg>`` element (a string)."""
    tf = (lambda v: np.log10(np.where(v > 0, v, np.nan))) if chart.log_y else (lambda v: v)
    pts = []
    for ln in chart.lines:
        x = ln.x if ln.x is not None else np.arange(ln.y.size, dtype=float)
        xs, ys = reduce_points(np.asarray(x, dtype=float), tf(np.asarray(ln.y, dtype=float)))
        pts.append((ln, xs, ys))
    all_x = np.concatenate([p[1] for p in pts]) if pts else np.array([])
    all_y = np.concatenate([p[2] for p in pts]) if pts else np.array([])
    band = None
    if chart.band is not None:
        lo_b, hi_b = (tf(np.asarray(b, dtype=float)) for b in chart.band)
        bx = (
            np.asarray(chart.band_x, dtype=float)
            if chart.band_x is not None
            else np.arange(lo_b.size, dtype=float)
        )
        ok = np.isfinite(lo_b) & np.isfinite(hi_b)
        if ok.any():
            _, lo_r = reduce_points(bx[ok], lo_b[ok])
            bx_r, hi_r = reduce_points(bx[ok], hi_b[ok])
            band = (bx_r, lo_r, hi_r)
            all_y = np.concatenate([all_y, lo_r, hi_r])
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(chart.title)}">',
        f'<text x="{PAD_L}" y="16" font-size="13" font-weight="bold">{escape(chart.title)}</text>',
    ]
    if all_x.size == 0 or not np.isfinite(all_y).any():
        out.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="#888">—</text></svg>')
        return "".join(out)
    x0, x1 = float(np.nanmin(all_x)), float(np.nanmax(all_x))
    y0, y1 = float(np.nanmin(all_y)), float(np.nanmax(all_y))
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5 * (abs(y0) or 1), y1 + 0.5 * (abs(y1) or 1)
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    pw, ph = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def sx(v: np.ndarray | float) -> np.ndarray:
        return np.asarray(PAD_L + (np.asarray(v) - x0) / (x1 - x0) * pw)

    def sy(v: np.ndarray | float) -> np.ndarray:
        return np.asarray(PAD_T + ph - (np.asarray(v) - y0) / (y1 - y0) * ph)

    out.append(f'<rect x="{PAD_L}" y="{PAD_T}" width="{pw}" height="{ph}" fill="#fff" stroke="#ccc"/>')
    for t in _ticks(y0, y1):
        yy = float(sy(t))
        label = _fmt(10**t) if chart.log_y else _fmt(t)
        out.append(
            f'<line x1="{PAD_L}" x2="{PAD_L + pw}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{PAD_L - 4}" y="{yy + 4:.1f}" font-size="10" text-anchor="end">{label}</text>'
        )
    for t in _ticks(x0, x1):
        xx = float(sx(t))
        out.append(
            f'<text x="{xx:.1f}" y="{PAD_T + ph + 14}" font-size="10" text-anchor="middle">{_fmt(t)}</text>'
        )
    out.append(
        f'<text x="{PAD_L + pw / 2}" y="{HEIGHT - 4}" font-size="10" text-anchor="middle">'
        f"{escape(chart.x_label)}</text>"
    )
    if band is not None:
        bx, lo, hi = band
        poly = (
            " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(bx), sy(hi)))
            + " "
            + " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(bx[::-1]), sy(lo[::-1])))
        )
        out.append(
            f'<polygon points="{poly}" fill="#2ca02c" fill-opacity="0.15" stroke="none">'
            f"<title>{escape(chart.band_label)}</title></polygon>"
        )
    legend_x = PAD_L + 8
    for ln, xs, ys in pts:
        if xs.size:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(xs), sy(ys)))
            dash = f' stroke-dasharray="{ln.dash}"' if ln.dash else ""
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{ln.color}" stroke-width="{ln.width}"'
                f' stroke-opacity="{ln.opacity}"{dash}><title>{escape(ln.label)}</title></polyline>'
            )
        out.append(
            f'<rect x="{legend_x}" y="{PAD_T + 6}" width="10" height="3" fill="{ln.color}"/>'
            f'<text x="{legend_x + 13}" y="{PAD_T + 11}" font-size="10">{escape(ln.label)}</text>'
        )
        legend_x += 20 + 6 * len(ln.label)
    for mx, my, label in chart.markers:
        yv = tf(np.asarray([my], dtype=float))[0]
        if math.isfinite(mx) and math.isfinite(yv):
            out.append(
                f'<circle cx="{float(sx(mx)):.1f}" cy="{float(sy(yv)):.1f}" r="4" fill="none" '
                f'stroke="#d62728" stroke-width="1.5"><title>{escape(label)}</title></circle>'
            )
    out.append("</svg>")
    return "".join(out)
