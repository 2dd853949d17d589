"""The Truncation page's sensitivity curves: each curve (a frame of
``engine.views.truncation_view.keep_k_view`` / ``mu_view``) drawn as one small inline SVG.

Why not Plotly: the browser's drawing of the page's two Plotly figures was ~100 ms of every slider move
(docs/notes/lead-33.md, "Slider round trips"); an inline SVG paints in about a millisecond. The geometry
(data -> pixel mapping, ticks) is the pure ``curve_axes`` so tests can check it against the closed form;
every marker's numbers are in a hover ``<title>`` (of a transparent strip over it; neighbours whose
numbers read the same, or closer than ``MIN_STRIP``, share one: ``hover_groups``); their full-precision
numbers stay on the server (``curve_rows``). The slider's setting (a red line) is drawn by
``setting_svg`` as a separate element over the curve: a move of the other slider then re-sends the
curve's markup unchanged and the browser does not redraw it. A μ move does redraw the keep-K curve (480
markers pooled on vicuna80), so its markup is kept small (``curve_svg``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np
import pandas as pd

from engine.views.truncation_view import y_range

CURVE_COLOURS = {"band": "rgba(59,91,219,0.15)", "mean": "#3b5bdb", "point": "#868e96", "setting": "#e03131",
                 "best": "#2b8a3e"}
"""The sensitivity curves' colours: the band and mean line (blue), the point estimate (grey), the slider's
setting (red) and the best K (green)."""

WIDTH, HEIGHT = 420, 290
"""The SVG's viewBox; it is drawn at the column's width (``width: 100%``), keeping this aspect; at 1280 px
a column of the page's two is ~400 px wide, so a font size here is about its size on screen."""


@dataclass(frozen=True)
class CurveAxes:
    """The plot area (pixels, y down) and the data ranges it shows; ``log``: the x axis is log10."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    log: bool
    left: float
    right: float
    top: float
    bottom: float

    def _t(self, v: float) -> float:
        return math.log10(v) if self.log else v

    def px(self, v: float) -> float:
        """The pixel column of data x ``v`` (linear in x, or in log10 x on a log axis)."""
        a, b = self._t(self.x_lo), self._t(self.x_hi)
        return self.left + (self._t(v) - a) / (b - a) * (self.right - self.left)

    def py(self, v: float) -> float:
        """The pixel row of data y ``v`` (``y_hi`` at the top)."""
        return self.bottom - (v - self.y_lo) / (self.y_hi - self.y_lo) * (self.bottom - self.top)

    def x_ticks(self) -> list[float]:
        """Decades on a log axis; 1-2-5 steps (integers for K) on a linear one; all inside the range."""
        if self.log:
            return [10.0 ** e for e in range(math.ceil(math.log10(self.x_lo) - 1e-9),
                                             math.floor(math.log10(self.x_hi) + 1e-9) + 1)]
        return nice_ticks(self.x_lo, self.x_hi, 7, integer=True)

    def y_ticks(self) -> list[float]:
        return nice_ticks(self.y_lo, self.y_hi, 5)


def nice_ticks(lo: float, hi: float, most: int, integer: bool = False) -> list[float]:
    """Ticks at multiples of a 1-2-5 step inside [lo, hi], at most about ``most`` of them."""
    raw = (hi - lo) / max(most, 1)
    mag = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), 10 * mag)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9)
    return [round(i * step, 12) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def curve_axes(frame: pd.DataFrame, x: str, marker: float, best: int = 0, width: int = WIDTH,
               height: int = HEIGHT) -> CurveAxes:
    """The curve's axes: x spans the frame's x and the lines drawn (setting, best K); y is
    ``y_range(frame)`` (a flat curve keeps a readable band). Room is left for the title, the tick labels,
    the axis titles and, on the keep-K curve, the legend below."""
    log = x == "mu"
    # one array op, not a Python loop over the frame: a slider move draws the setting over both curves (the
    # pooled keep-K curve has 480 rows), and this ran once per curve per move
    xs = np.concatenate([frame[x].to_numpy(np.float64), [float(marker)],
                         [float(best)] if x == "k" and best else []])
    xs = xs[np.isfinite(xs) & ((xs > 0) | (not log))]
    lo, hi = (float(xs.min()), float(xs.max())) if xs.size else (1.0, 10.0)
    if hi <= lo:
        lo, hi = (lo / 10 ** 0.5, hi * 10 ** 0.5) if log else (lo - 1, hi + 1)
    y_lo, y_hi = y_range(frame)
    return CurveAxes(lo, hi, float(y_lo), float(y_hi), log, left=58.0, right=width - 12.0, top=34.0,
                     bottom=height - (72.0 if x == "k" else 48.0))


def _fmt(v: float) -> str:
    return f"{v:.2f}"


def _tick_label(v: float, log: bool) -> str:
    return f"{v:g}" if log or v != int(v) else str(int(v))


def _runs(ok: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True in ``ok``: a NaN breaks a line into pieces (a gap, not a zero)."""
    runs, start = [], None
    for i, good in enumerate(ok):
        if good and start is None:
            start = i
        elif not good and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(ok)))
    return runs


def _path(ax: CurveAxes, xs: np.ndarray, ys: np.ndarray) -> str:
    ok = np.isfinite(ys) & np.isfinite(xs)
    return " ".join("M" + " L".join(f"{_fmt(ax.px(xs[i]))},{_fmt(ax.py(ys[i]))}" for i in range(a, b))
                    for a, b in _runs(ok))


def _vline(ax: CurveAxes, at: float, dash: str, colour: str, cls: str) -> str:
    xp = _fmt(ax.px(at))
    return (f'<line class="{cls}" data-at="{float(at)!r}" x1="{xp}" x2="{xp}" y1="{ax.top}" '
            f'y2="{ax.bottom}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="{dash}"/>')


SETTING_LIFT = f"calc(-100% * {HEIGHT} / {WIDTH} - 1.5rem)"
"""How far ``setting_svg`` is lifted onto the curve drawn just above it in the same column: the curve's
height (its width × HEIGHT / WIDTH; a percentage margin is of the width) and the space Streamlit leaves
between the two elements (1.5rem, measured in Chromium: the elements' gap and the curve's paragraph).
tests/test_browser.py checks that the two boxes coincide at 1280 px."""


def setting_svg(frame: pd.DataFrame, x: str, marker: float, best: int = 0) -> str:
    """The slider's setting on ``curve_svg(frame, x, marker, ..., best=best, setting=False)``: the same
    viewBox and axes holding only the dashed red line at ``marker``, lifted over that curve (it is drawn as
    the next element of the same column) and transparent to the pointer (the markers' hover texts stay
    reachable). A move of the other slider changes this small element only, not the curve's markup: the
    browser then redraws a line, not the curve (a pooled keep-K curve is ~480 markers)."""
    ax = curve_axes(frame, x, marker, best)
    return (f'<div style="position:relative;margin-top:{SETTING_LIFT};pointer-events:none">'
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="curve-setting" '
            f'data-x="{x}" aria-hidden="true" style="width:100%;height:auto;display:block">'
            + _vline(ax, marker, "6,4", CURVE_COLOURS["setting"], "setting") + "</svg></div>")


def _hit_spans(cx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each marker's hover strip, [lo, hi) in pixels: from the midpoint to the marker on its left to the
    midpoint to the one on its right (the strips tile the curve's x range, so a pointer anywhere over it
    finds the nearest marker's numbers), the outer edges half a gap (at least the marker's radius) outside."""
    order = np.argsort(cx, kind="stable")
    c = cx[order]
    mid = (c[1:] + c[:-1]) / 2
    outer = max(float(np.diff(c).max()) / 2 if len(c) > 1 else 0.0, MARKER_R)
    edges = np.concatenate([[c[0] - outer], mid, [c[-1] + outer]]) if len(c) else np.zeros(1)
    lo, hi = np.empty_like(cx), np.empty_like(cx)
    lo[order], hi[order] = edges[:-1], edges[1:]
    return lo, hi


MARKER_R = 2.5
"""A marker's radius (px of the viewBox): each is a zero-length piece of the markers' path with round caps,
stroke width 2·MARKER_R, a filled circle of this radius."""


MIN_STRIP = 2.0
"""The narrowest hover strip (px of the viewBox, about two screen pixels at 1280 px): narrower neighbours
share one strip (``hover_groups``). A pooled vicuna80 keep-K curve has 480 markers over 350 px, 0.73 px
each: with a strip each, narrower than a screen pixel, about a third of them could not be pointed at."""


def _numbers(mean: float, low: float, high: float, point: float) -> str:
    """A marker's numbers as its hover shows them (4 decimals)."""
    return f"mean {mean:.4f}\n95 % interval {low:.4f} … {high:.4f}\nall kept graphs {point:.4f}"


def hover_groups(texts: list[str], lo: np.ndarray, hi: np.ndarray,
                 joins: np.ndarray) -> list[list[tuple[int, int]]]:
    """Which markers share a hover strip. ``texts``: each marker's numbers as shown, ``lo``/``hi``: its own
    strip (``_hit_spans``), markers in x order; ``joins[j]``: marker j is the row right after marker j - 1's
    (no row without a marker, a NaN mean, between them). Runs of joined neighbours whose numbers read the
    same are one hover line (``[start, end)`` of markers: ``x = a … b`` never spans a row it does not
    show); runs are packed, left to right, into one strip until it is at least
    ``MIN_STRIP`` wide. Every marker stays in its own place: the strip over it is the union of the strips of
    its markers, and its hover has a line for that marker's x with its numbers. Why: each titled strip is
    an element the browser's Markdown pipeline parses and React builds on every μ move (the pooled keep-K
    curve had 480); a curve constant over many K is one strip saying so."""
    runs: list[tuple[int, int]] = []
    for j, t in enumerate(texts):
        if runs and joins[j] and texts[runs[-1][0]] == t:
            runs[-1] = (runs[-1][0], j + 1)
        else:
            runs.append((j, j + 1))
    strips: list[list[tuple[int, int]]] = []
    for run in runs:
        if strips and hi[strips[-1][-1][1] - 1] - lo[strips[-1][0][0]] < MIN_STRIP:
            strips[-1].append(run)
        else:
            strips.append([run])
    return strips


def _hit_strips(x: str, rows: np.ndarray, xs: np.ndarray, mean: np.ndarray, low: np.ndarray,
                high: np.ndarray, point: np.ndarray, cx: np.ndarray, top: str, bottom: str) -> list[str]:
    """The hover strips' markup (``hover_groups``): one transparent path of the plot's height per group,
    its ``<title>`` the group's lines: ``x = a`` (or ``x = a … b`` over a run whose numbers read the same)
    then the numbers, or, with several runs, a line per run ``x = a: mean …, 95 % interval … … …, all kept
    graphs …``. ``rows``: each marker's row in the frame. The title's line breaks are written ``&#10;``
    (the same text in the DOM): with literal newlines the browser's Markdown parser (micromark) handled
    every title line as a line of the HTML block, most of the pooled keep-K curve's parse time
    (docs/notes/mu37-37.md)."""
    order = np.argsort(cx, kind="stable")
    lo, hi = _hit_spans(cx)
    lo, hi = lo[order], hi[order]
    texts = [_numbers(mean[i], low[i], high[i], point[i]) for i in order]
    joins = np.diff(rows[order], prepend=-2) == 1

    def at(run: tuple[int, int]) -> str:
        a, b = xs[order[run[0]]], xs[order[run[1] - 1]]
        return f"{x} = {a:g}" + (f" … {b:g}" if run[1] - run[0] > 1 else "")

    out = []
    for strip in hover_groups(texts, lo, hi, joins):
        if len(strip) == 1:
            hover = f"{at(strip[0])}\n{texts[strip[0][0]]}"
        else:
            hover = "\n".join(f"{at(r)}: " + texts[r[0]].replace("\n", ", ") for r in strip)
        first, last = _fmt(lo[strip[0][0]]), _fmt(hi[strip[-1][1] - 1])
        out.append(f'<path d="M{first},{top}H{last}V{bottom}H{first}z">'
                   f'<title>{escape(hover).replace(chr(10), "&#10;")}</title></path>')
    return out


CURVE_ROW_COLUMNS = ("x", "mean", "ci_low", "ci_high", "point")
"""The columns of ``curve_rows``: the curve's x (K or μ) then the frame's numbers a marker shows."""


def _drawn(frame: pd.DataFrame, x: str) -> np.ndarray:
    """The frame's rows that get a marker (a finite x and mean), in frame order."""
    xs, mean = (frame[c].to_numpy(dtype=np.float64) for c in (x, "mean"))
    return np.flatnonzero(np.isfinite(mean) & np.isfinite(xs))


def curve_rows(frame: pd.DataFrame, x: str) -> np.ndarray:
    """The numbers ``curve_svg(frame, x, ...)`` draws, one row per marker in the markers' order
    (``CURVE_ROW_COLUMNS``, float64, full precision, NaN kept): what the markup shows at the digits it
    writes (pixels to 2 decimals, hovers to 4). The page keeps these beside the markup it sends
    (session state, ``CURVES_DRAWN``) so that tests compare what it drew with a curve made from scratch bit
    for bit without the numbers travelling to the browser."""
    cols = [frame[c].to_numpy(dtype=np.float64) for c in (x, "mean", "ci_low", "ci_high", "point")]
    return np.column_stack(cols)[_drawn(frame, x)]


CURVES_DRAWN = "_curves_drawn"
"""The session-state key under which the Truncation page keeps, per curve it drew (``"k"``, ``"mu"``), the
``curve_rows`` its markup was drawn from. Session state because it is the session's own (two readers'
pages never mix), stays on the server (nothing sent to the browser) and AppTest reads it
(tests/curve_svg_read.py ``page_curves``)."""


def curve_svg(frame: pd.DataFrame, x: str, marker: float, title: str, yaxis_title: str, best: int = 0,
              setting: bool = True) -> str:
    """One sensitivity curve as an inline SVG string: the band ``ci_low``…``ci_high`` (blue fill), the
    ``mean`` over draws (blue line with markers), the ``point`` fit (dotted grey), a dashed red line at the
    slider's ``marker`` and, on the keep-K curve (``x == "k"``), a dotted green line at ``best`` labelled
    ``best K = …`` and a legend. ``x``: ``"k"`` (linear axis) or ``"mu"`` (log axis, ticks at the decades).
    The title and axis titles are escaped. ``setting=False``: without the red line (the page draws it over
    the curve with ``setting_svg``, so the curve's markup stays the same while the other slider moves).

    Compact, because a pooled vicuna80 keep-K curve has 480 markers and a μ move redraws it (the browser's
    work grows with the markup's bytes and elements): the markers are one path (a round dot per row with a
    mean), the hover texts are the ``<title>`` of invisible strips of the plot's height over the markers
    (``_hit_spans``; a strip per run of markers whose numbers read the same, runs narrower than
    ``MIN_STRIP`` packed into one: ``hover_groups``). The rows' full-precision numbers are not in the
    markup (``curve_rows`` gives them; a reader wanting the numbers has the CLI's ``experiment keep-k`` /
    ``mu``): as a 41 kB JSON attribute they were half of the browser's Markdown work on a μ move's pooled
    keep-K curve (docs/notes/mu37-37.md, mu38-38.md). The svg is
    wrapped in a div so that Markdown takes it as an HTML block, passed through whole, not as a paragraph
    of inline HTML that its inline parser walks tag by tag; the div's bottom margin is the paragraph's
    (Streamlit takes 1rem off the end of a Markdown element), so the page's layout and ``SETTING_LIFT``
    stay as they were."""
    ax = curve_axes(frame, x, marker, best)
    xs = frame[x].to_numpy(dtype=np.float64)
    mean, low, high, point = (frame[c].to_numpy(dtype=np.float64)
                              for c in ("mean", "ci_low", "ci_high", "point"))
    shown = _drawn(frame, x)
    font = 'font-family="sans-serif" font-size="11" fill="#31333f"'
    out = [f'<div class="curve" style="margin-bottom:1rem">'
           f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="curve-svg" '
           f'data-x="{x}" data-x-lo="{ax.x_lo!r}" data-x-hi="{ax.x_hi!r}" data-y-lo="{ax.y_lo!r}" '
           f'data-y-hi="{ax.y_hi!r}" data-log="{int(ax.log)}" '
           f'style="width:100%;height:auto;display:block" role="img" aria-label="{escape(title)}">',
           f'<text x="{ax.left}" y="18" font-family="sans-serif" font-size="14" fill="#31333f">'
           f'{escape(title)}</text>']
    # grid and ticks
    for t in ax.y_ticks():
        y = _fmt(ax.py(t))
        out.append(f'<line x1="{ax.left}" x2="{ax.right}" y1="{y}" y2="{y}" stroke="#e9ecef"/>'
                   f'<text class="ytick" x="{ax.left - 6}" y="{y}" dy="4" text-anchor="end" {font}>'
                   f'{t:g}</text>')
    for t in ax.x_ticks():
        xp = _fmt(ax.px(t))
        out.append(f'<line x1="{xp}" x2="{xp}" y1="{ax.top}" y2="{ax.bottom}" stroke="#e9ecef"/>'
                   f'<text class="xtick" x="{xp}" y="{ax.bottom + 16}" text-anchor="middle" {font}>'
                   f'{_tick_label(t, ax.log)}</text>')
    out.append(f'<rect class="plot" x="{ax.left}" y="{ax.top}" width="{ax.right - ax.left}" '
               f'height="{ax.bottom - ax.top}" fill="none" stroke="#ced4da"/>')
    out.append(f'<text x="{(ax.left + ax.right) / 2}" y="{ax.bottom + 34}" text-anchor="middle" {font}>'
               f'{escape(x)}</text>')
    out.append(f'<text transform="translate(16,{(ax.top + ax.bottom) / 2}) rotate(-90)" text-anchor="middle" '
               f'{font}>{escape(yaxis_title)}</text>')
    # the band: ci_high forward, ci_low back, one polygon per run where both ends are known
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(xs)
    for a, b in _runs(ok):
        pts = [f"{_fmt(ax.px(xs[i]))},{_fmt(ax.py(high[i]))}" for i in range(a, b)]
        pts += [f"{_fmt(ax.px(xs[i]))},{_fmt(ax.py(low[i]))}" for i in range(b - 1, a - 1, -1)]
        out.append(f'<polygon class="band" points="{" ".join(pts)}" fill="{CURVE_COLOURS["band"]}"/>')
    if path := _path(ax, xs, point):
        out.append(f'<path class="point" d="{path}" fill="none" stroke="{CURVE_COLOURS["point"]}" '
                   'stroke-width="1.5" stroke-dasharray="2,3"/>')
    if path := _path(ax, xs, mean):
        out.append(f'<path class="mean" d="{path}" fill="none" stroke="{CURVE_COLOURS["mean"]}" '
                   'stroke-width="2"/>')
    cx = np.array([ax.px(xs[i]) for i in shown], dtype=np.float64)
    if len(shown):
        dots = "".join(f"M{_fmt(c)},{_fmt(ax.py(mean[i]))}h0" for c, i in zip(cx, shown, strict=True))
        out.append(f'<path class="markers" d="{dots}" fill="none" stroke="{CURVE_COLOURS["mean"]}" '
                   f'stroke-width="{2 * MARKER_R:g}" stroke-linecap="round"/>')
    if setting:
        out.append(_vline(ax, marker, "6,4", CURVE_COLOURS["setting"], "setting"))
    if x == "k":
        out.append(_vline(ax, best, "2,3", CURVE_COLOURS["best"], "best"))
        out.append(f'<text x="{_fmt(ax.px(best) + 4)}" y="{ax.top + 12}" font-family="sans-serif" '
                   f'font-size="11" fill="{CURVE_COLOURS["best"]}">best K = {int(best)}</text>')
        ly = HEIGHT - 12
        out.append(f'<line x1="{ax.left}" x2="{ax.left + 24}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{CURVE_COLOURS["mean"]}" stroke-width="2"/>'
                   f'<circle cx="{ax.left + 12}" cy="{ly - 4}" r="3" fill="{CURVE_COLOURS["mean"]}"/>'
                   f'<text x="{ax.left + 30}" y="{ly}" {font}>mean over draws</text>'
                   f'<line x1="{ax.left + 150}" x2="{ax.left + 174}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{CURVE_COLOURS["point"]}" stroke-width="1.5" stroke-dasharray="2,3"/>'
                   f'<text x="{ax.left + 180}" y="{ly}" {font}>all kept graphs</text>')
    if len(shown):
        # the hover texts, last so that they are on top: a strip per group of markers, transparent, hit over
        # its area
        out.append('<g class="hits" fill="none" pointer-events="fill">')
        out.extend(_hit_strips(x, shown, xs[shown], mean[shown], low[shown], high[shown], point[shown], cx,
                               f"{ax.top:g}", f"{ax.bottom:g}"))
        out.append("</g>")
    out.append("</svg></div>")
    return "".join(out)
