"""The Truncation page's sensitivity curves as inline SVG (``app_pages._curve_figure.curve_svg``), read
back from the markup (tests/curve_svg_read.py) and checked against the frame and the closed-form data ->
pixel mapping: every marker at its row's numbers and pixel, the band's upper edge at ci_high, the log μ
axis with decades at equal steps, a NaN mean leaving a gap (no marker, a broken line, never a zero), the
setting and best-K lines, the y range of ``y_range``, escaped titles, the legend on the keep-K curve only;
the compact markup (one path of dots, hover strips tiling the x range, a line per run of markers whose
numbers read the same, packed into strips at least MIN_STRIP wide, the rows' numbers bit
for bit in ``curve_rows``, which the page keeps on the server, not in the markup; the svg in a div that
Markdown takes as one HTML block)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from curve_svg_read import read_curve, read_setting
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app_pages._curve_figure import HEIGHT, MIN_STRIP, SETTING_LIFT, WIDTH, curve_rows, curve_svg, setting_svg
from engine.views.truncation_view import best_k, y_range


def curve(x: str, n: int, seed: int, flat: bool | str = False, nan_at: tuple[int, ...] = ()) -> pd.DataFrame:
    """A curve frame as keep_k_view / mu_view return it (x, mean, its band, point)."""
    rng = np.random.default_rng(seed)
    xs = np.arange(1, n + 1) if x == "k" else np.logspace(-2, 2, n)
    if flat == "runs":  # steps at random places: runs of equal numbers, some of one marker
        step = np.cumsum(rng.random(n) < 0.4)
        mean, half, point = (rng.random(n + 1)[step] for _ in range(3))
        frame = pd.DataFrame({x: xs, "mean": mean, "ci_low": mean - half / 10, "ci_high": mean + half / 10,
                              "point": point})
        frame.loc[list(nan_at), ["mean", "ci_low", "ci_high"]] = np.nan
        return frame
    mean = np.full(n, 0.2) if flat else rng.random(n)
    half = 0.0 if flat else rng.random(n) / 10
    frame = pd.DataFrame({x: xs, "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
                          "point": mean if flat else rng.random(n)})
    frame.loc[list(nan_at), ["mean", "ci_low", "ci_high"]] = np.nan
    return frame


RUN_CASES = [("k", 480, 8, "runs", 1, (3, 11)), ("k", 300, 9, "runs", 2, ()), ("mu", 17, 10, "runs", 1.0, ())]
"""Curves whose numbers repeat over runs of neighbours (as a pooled keep-K curve's do where its kept
graphs settle), with steps at random places: ``curve(..., flat="runs")``."""

CASES = [("k", 80, 0, False, 40, ()), ("k", 480, 1, False, 1, (5,)), ("k", 2, 2, False, 2, ()),
         ("k", 60, 3, True, 29, ()), ("mu", 17, 4, False, 1.0, (8,)), ("mu", 17, 5, True, 0.01, ()),
         ("mu", 17, 6, False, 100.0, ()), ("mu", 5, 7, False, 0.316, ())]


def pixel(value: float, lo: float, hi: float, a: float, b: float, log: bool = False) -> float:
    """The closed form: ``value`` on [lo, hi] (log10 on a log axis) mapped linearly onto [a, b]."""
    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    return a + (f(value) - f(lo)) / (f(hi) - f(lo)) * (b - a)


@pytest.mark.parametrize("x,n,seed,flat,marker,nan_at", CASES)
def test_markers_band_and_lines_are_the_frame_at_the_closed_form_pixels(x, n, seed, flat, marker, nan_at):
    frame = curve(x, n, seed, flat, nan_at)
    k_best = best_k(curve("k", n, seed, flat))
    got = read_curve(curve_svg(frame, x, marker, f"distance vs {x}", "Spearman ρ distance", best=k_best),
                     curve_rows(frame, x))
    log = x == "mu"
    left, right, top, bottom = got["plot"]
    # the axes: x spans the data and the lines drawn, y is y_range's
    spans = [*frame[x], marker] + ([k_best] if x == "k" else [])
    assert (got["x_lo"], got["x_hi"]) == (min(spans), max(spans)) or min(spans) == max(spans)
    assert [got["y_lo"], got["y_hi"]] == y_range(frame)
    px = lambda v: pixel(v, got["x_lo"], got["x_hi"], left, right, log)  # noqa: E731
    py = lambda v: pixel(v, got["y_lo"], got["y_hi"], bottom, top)  # noqa: E731
    # one marker per row with a mean, carrying that row's numbers, at the closed-form pixel
    rows = frame[frame["mean"].notna()]
    assert [m["x"] for m in got["markers"]] == rows[x].astype(float).tolist()
    for key, col in (("mean", "mean"), ("lo", "ci_low"), ("hi", "ci_high"), ("point", "point")):
        assert [m[key] for m in got["markers"]] == rows[col].tolist(), key
    for m in got["markers"]:
        assert abs(m["cx"] - px(m["x"])) <= 0.006 and abs(m["cy"] - py(m["mean"])) <= 0.006, m
        assert m["strip"][0] < m["cx"] < m["strip"][1], m  # its hover strip is around its dot
        # the hover over it has a line for its x with its numbers (the reader found the line covering x)
        line = m["line"]
        assert line["x"] == x and float(line["a"]) <= float(f"{m['x']:g}") <= float(line["b"]), line
        assert [line[k] for k in ("mean", "lo", "hi", "point")] == [f"{m[k]:.4f}" for k in (
            "mean", "lo", "hi", "point")], (line, m)
    # the band: ci_high forward along the top edge, ci_low back along the bottom, a piece per NaN-free run
    assert len(got["band"]) == len(nan_at) + 1
    edge = [p for poly in got["band"] for p in poly[: len(poly) // 2]]
    back = [p for poly in got["band"] for p in poly[len(poly) // 2:][::-1]]
    assert np.allclose([p[0] for p in edge], [px(v) for v in rows[x]], atol=0.006)
    assert np.allclose([p[1] for p in edge], [py(v) for v in rows["ci_high"]], atol=0.006)
    assert np.allclose([p[1] for p in back], [py(v) for v in rows["ci_low"]], atol=0.006)
    # the mean line through the markers, broken at each NaN; the point line unbroken
    assert len(got["mean"]) == len(nan_at) + 1 and len(got["point"]) == 1
    assert [p for piece in got["mean"] for p in piece] == [(m["cx"], m["cy"]) for m in got["markers"]]
    assert np.allclose([p[1] for p in got["point"][0]], [py(v) for v in frame["point"]], atol=0.006)
    # the setting line; the best K line, its label and the legend on the keep-K curve only
    assert got["setting"] == [float(marker)]
    assert got["best"] == ([float(k_best)] if x == "k" else [])
    assert (f"best K = {k_best}" in got["texts"]) == (x == "k")
    assert ("mean over draws" in got["texts"] and "all kept graphs" in got["texts"]) == (x == "k")
    assert got["texts"][:3] == [f"distance vs {x}", x, "Spearman ρ distance"]


def test_the_log_axis_puts_decades_at_equal_steps_and_the_linear_one_integers():
    frame = curve("mu", 17, 0)
    got = read_curve(curve_svg(frame, "mu", 1.0, "t", "y"), curve_rows(frame, "mu"))
    assert got["xticks"] == ["0.01", "0.1", "1", "10", "100"]
    left, right, _, _ = got["plot"]
    at = [m["cx"] for m in got["markers"]]
    # 17 points log-spaced over four decades: every fourth is a decade, 1/4 of the width apart
    assert np.allclose(np.diff(at[::4]), (right - left) / 4, atol=0.01)
    assert np.allclose(np.diff(at), np.diff(at)[0], atol=0.01)
    k80 = curve("k", 80, 0)
    k = read_curve(curve_svg(k80, "k", 40, "t", "y", best=3), curve_rows(k80, "k"))
    assert k["xticks"] == ["20", "40", "60", "80"]  # 1-2-5 steps, at most ~7
    ys = [float(t) for t in k["yticks"]]
    assert len(ys) >= 3 and all(k["y_lo"] <= v <= k["y_hi"] for v in ys)


def test_a_nan_mean_leaves_a_gap_not_a_zero():
    frame = curve("k", 10, 0, nan_at=(0, 4, 5))
    got = read_curve(curve_svg(frame, "k", 3, "t", "y", best=2), curve_rows(frame, "k"))
    assert [m["x"] for m in got["markers"]] == [2.0, 3.0, 4.0, 7.0, 8.0, 9.0, 10.0]
    assert [len(piece) for piece in got["mean"]] == [3, 4] and len(got["band"]) == 2
    zero = pixel(0.0, got["y_lo"], got["y_hi"], got["plot"][3], got["plot"][2])  # where y = 0 is drawn
    assert all(abs(y - zero) > 1 for piece in got["mean"] for _, y in piece)


def test_titles_are_escaped_and_the_svg_scales_with_its_column():
    nasty = "<script>window.__x=1</script> & \"q\" <img src=x onerror=alert(1)>"
    frame = curve("k", 5, 0)
    svg = curve_svg(frame, "k", 2, nasty, nasty, best=1)
    assert "<script" not in svg and "<img" not in svg
    got = read_curve(svg, curve_rows(frame, "k"))  # valid XML
    assert got["texts"][0] == nasty and got["texts"][2] == nasty
    assert got["root"]["viewBox"].startswith("0 0 ") and "width:100%" in got["root"]["style"]


@pytest.mark.parametrize("x,n,seed,flat,marker,nan_at", CASES)
def test_the_setting_overlay_is_the_curves_own_red_line_and_the_curve_stays_the_same_markup(
        x, n, seed, flat, marker, nan_at):
    """The page draws ``curve_svg(..., setting=False)`` and ``setting_svg`` over it: together they are the
    whole curve (the same red line, at the same pixel of the same viewBox), and the curve's markup does not
    depend on the setting within the frame's range (a move of the other slider re-sends the same markup,
    which the browser does not redraw)."""
    frame = curve(x, n, seed, flat, nan_at)
    k_best = best_k(frame) if x == "k" else 0
    whole = read_curve(curve_svg(frame, x, marker, "t", "y", best=k_best), curve_rows(frame, x))
    bare = curve_svg(frame, x, marker, "t", "y", best=k_best, setting=False)
    assert read_curve(bare, curve_rows(frame, x)) == {**whole, "setting": []}
    over = read_setting(setting_svg(frame, x, marker, best=k_best))
    assert over["setting"] == whole["setting"] == [float(marker)] and over["x"] == x
    assert over["viewBox"] == whole["root"]["viewBox"] == f"0 0 {WIDTH} {HEIGHT}" and over["elements"] == 1
    left, right, _, _ = whole["plot"]
    assert over["x1"] == [round(pixel(marker, whole["x_lo"], whole["x_hi"], left, right, x == "mu"), 2)]
    assert f"margin-top:{SETTING_LIFT}" in over["style"] and "pointer-events:none" in over["style"]
    others = frame[x].iloc[[0, -1]].tolist()  # the other settings the slider can take: the same curve markup
    assert all(curve_svg(frame, x, o, "t", "y", best=k_best, setting=False) == bare for o in others)


@pytest.mark.parametrize("x,n,seed,flat,marker,nan_at", CASES + RUN_CASES)
def test_the_markup_is_compact_and_draws_and_hovers_every_marker(x, n, seed, flat, marker, nan_at):
    """The compact markup (a pooled keep-K curve is redrawn on every μ move): the svg inside a div whose
    markup Markdown takes as one HTML block (it starts with ``<div``, has no newline at all, ends with the
    div); the markers one path of dots with round caps 5 wide, the same as circles of radius 2.5 (the
    legend's marker is a circle of radius 3); no full-precision numbers in the markup (no ``data-points``):
    ``curve_rows`` the rows with a mean, bit for bit, NaN kept, which the markup shows at its digits. The
    hover strips: their edges are midpoints between neighbouring dots (brute force over the dots' pixels)
    and they tile the x range with no gap or overlap; a hover line
    is a maximal run of neighbours whose numbers read the same (two neighbouring lines never read the same,
    and every marker's line has its own numbers: read_curve); lines are packed left to right into strips
    of at least ``MIN_STRIP`` px: every strip but the last is that wide, and a strip of several lines is
    narrower without its last one; one strip per marker where markers are wide apart and their numbers
    differ."""
    frame = curve(x, n, seed, flat, nan_at)
    k_best = best_k(frame) if x == "k" else 0
    markup = curve_svg(frame, x, marker, "t", "y", best=k_best)
    assert markup.startswith('<div class="curve" style="margin-bottom:1rem"><svg ') and markup.endswith(
        "</svg></div>")
    assert "\n" not in markup and markup.count("<div") == 1 and "data-points" not in markup
    got = read_curve(markup, curve_rows(frame, x))
    assert got["marker_style"] == {"class": "markers", "fill": "none", "stroke": "#3b5bdb",
                                   "stroke-width": "5", "stroke-linecap": "round"}
    assert got["hit_style"] == {"class": "hits", "fill": "none", "pointer-events": "fill"}
    cx = [m["cx"] for m in got["markers"]]
    hits = got["hits"]
    assert markup.count("<title>") == len(hits) and markup.count("<circle") == (1 if x == "k" else 0)
    # edges: the outer ones half the widest gap (>= the dot's radius) outside, the others midpoints
    outer = max([(b - a) / 2 for a, b in zip(cx, cx[1:], strict=False)] + [2.5])
    assert abs(hits[0]["strip"][0] - (cx[0] - outer)) <= 0.006
    assert abs(hits[-1]["strip"][1] - (cx[-1] + outer)) <= 0.006
    for h, nxt in zip(hits, hits[1:], strict=False):
        assert h["strip"][1] == nxt["strip"][0]  # the same rounded pixel: no gap, no overlap
        j = next(j for j, c in enumerate(cx) if c > h["strip"][1])  # the first dot of the next strip
        assert abs(h["strip"][1] - (cx[j - 1] + cx[j]) / 2) <= 0.006, (h["strip"], cx[j - 1], cx[j])
    # lines: maximal runs, in x order, covering every marker once
    lines = [ln for h in hits for ln in h["lines"]]
    numbers = [tuple(ln[k] for k in ("mean", "lo", "hi", "point")) for ln in lines]
    gone = frame.loc[frame["mean"].isna(), x].tolist()  # a row without a marker is in no line's range
    for i in range(len(lines) - 1):
        ln, nxt, a, b = lines[i], lines[i + 1], numbers[i], numbers[i + 1]
        # neighbouring lines read differently, unless a row without a marker lies between them
        assert a != b or any(float(ln["b"]) < float(f"{v:g}") < float(nxt["a"]) for v in gone), (ln, nxt)
    assert sum(m["line"] is ln for m in got["markers"] for ln in lines) == len(cx)
    assert all(sum(m["line"] is ln for m in got["markers"]) >= 1 for ln in lines)
    assert not [(v, ln) for v in gone for ln in lines if float(ln["a"]) <= float(f"{v:g}") <= float(ln["b"])]
    # packing: every strip but the last at least MIN_STRIP wide; several lines only while narrower
    for i, h in enumerate(hits):
        lo, hi = h["strip"]
        assert i == len(hits) - 1 or hi - lo >= MIN_STRIP - 0.006, (i, h["strip"])
        if len(h["lines"]) > 1:
            last_a = float(h["lines"][-1]["a"])
            j = next(j for j, m in enumerate(got["markers"]) if float(f"{m['x']:g}") == last_a)
            assert (cx[j - 1] + cx[j]) / 2 - lo < MIN_STRIP + 0.006, (i, h["strip"], h["lines"])
    gaps = np.diff(cx)
    if len(cx) > 1 and gaps.min() >= MIN_STRIP and not flat:
        assert len(hits) == len(cx)  # wide apart, numbers differ: a strip (and its title) per marker
    rows = frame[frame["mean"].notna()]
    want = rows[[x, "mean", "ci_low", "ci_high", "point"]].astype(float).to_numpy()
    have = np.array([[m["x"], m["mean"], m["lo"], m["hi"], m["point"]] for m in got["markers"]])
    assert have.shape == want.shape and (have == want).all()  # bit for bit


def test_hover_lines_keep_their_line_breaks_and_a_lone_marker_reads_as_before():
    """A title's line breaks are written ``&#10;`` (no newline in the Markdown source) and read back as
    newlines; a strip of one marker has the hover text markers had before the strips were grouped."""
    frame = curve("k", 12, 3)
    markup = curve_svg(frame, "k", 3, "t", "y", best=1)
    assert "&#10;" in markup and "\n" not in markup
    m = read_curve(markup, curve_rows(frame, "k"))["markers"][4]
    r = frame.iloc[4]
    assert m["hover"] == (f"k = 5\nmean {r['mean']:.4f}\n95 % interval {r['ci_low']:.4f} … "
                          f"{r['ci_high']:.4f}\nall kept graphs {r['point']:.4f}")


def test_a_nan_in_a_row_with_a_mean_is_kept_in_the_numbers():
    """A row whose interval or point is NaN (its mean known) keeps its marker, and its NaN reads back NaN
    (``curve_rows`` keeps it, the hover writes ``nan``), not a zero or a dropped row."""
    frame = curve("k", 6, 0)
    frame.loc[2, ["ci_low", "point"]] = np.nan
    got = read_curve(curve_svg(frame, "k", 3, "t", "y", best=1), curve_rows(frame, "k"))
    assert [m["x"] for m in got["markers"]] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    third = got["markers"][2]
    assert math.isnan(third["lo"]) and math.isnan(third["point"]) and third["mean"] == frame["mean"][2]
    assert "interval nan" in third["hover"]


@settings(max_examples=150, deadline=None)
@given(x=st.sampled_from(["k", "mu"]),
       values=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.5 + 1e-12, 1.0, 3.0, -0.5, math.nan, math.inf]),
                       min_size=1, max_size=12),
       xs=st.lists(st.sampled_from([0.0, 0.01, 1.0, 2.0, 7.0, 100.0, math.nan, math.inf, -1.0]),
                   min_size=12, max_size=12),
       order=st.permutations(list(range(1, 13))), k_nan=st.sampled_from([None, 0, 1, 5]),
       marker=st.sampled_from([0.0, 0.01, 3.0, 50.0, math.nan, math.inf]),
       best=st.sampled_from([0, 1, 4, 600]))
@example(x="k", values=[0.5 + 1e-12, 0.5], xs=[1.0] * 12, order=list(range(1, 13)), k_nan=None, marker=1.0,
         best=0)
@example(x="k", values=[0.2, 0.2, 0.3], xs=[1.0] * 12, order=list(range(1, 13)), k_nan=1, marker=1.0, best=0)
def test_the_axes_range_and_best_k_are_their_definitions_read_row_by_row(x, values, xs, order, k_nan, marker,
                                                                           best):
    """``curve_axes``'s x range, ``y_range`` and ``best_k`` work on whole columns (one array op each: they
    run on every slider move); here each is its definition read value by value in Python: x spans the
    finite x values, the setting and (keep-K curve) the best K, positive ones only on the log μ axis; y spans
    the finite band, mean and point values; the best K is the smallest k (in any row order; a missing k is
    never it) whose mean is within ``isclose`` of the smallest mean, NaN never one."""
    from app_pages._curve_figure import curve_axes

    n = len(values)
    ks = [float(k) for k in order[:n]]
    if k_nan is not None and k_nan < n:
        ks[k_nan] = math.nan
    frame = pd.DataFrame({x: xs[:n] if x == "mu" else ks, "mean": values,
                          "ci_low": values[::-1], "ci_high": values, "point": [v * 2 for v in values]})
    log = x == "mu"
    spans = [float(v) for v in frame[x]] + [float(marker)] + ([float(best)] if x == "k" and best else [])
    spans = [v for v in spans if math.isfinite(v) and (v > 0 or not log)]
    ax = curve_axes(frame, x, marker, best)
    lo, hi = (min(spans), max(spans)) if spans else (1.0, 10.0)
    if hi <= lo:
        lo, hi = (lo / 10 ** 0.5, hi * 10 ** 0.5) if log else (lo - 1, hi + 1)
    assert (ax.x_lo, ax.x_hi) == (lo, hi)
    finite = [float(v) for c in ("ci_low", "ci_high", "mean", "point") for v in frame[c] if math.isfinite(v)]
    if finite:
        y_lo, y_hi = min(finite), max(finite)
        pad = 0.05 * (y_hi - y_lo)
        y_lo, y_hi = y_lo - pad, y_hi + pad
        if y_hi - y_lo < 0.05:
            mid = (y_lo + y_hi) / 2.0
            y_lo, y_hi = mid - 0.025, mid + 0.025
        if y_lo < 0 <= min(finite):
            y_lo, y_hi = 0.0, y_hi - y_lo
        assert y_range(frame) == [y_lo, y_hi]
    else:
        assert y_range(frame) == [0.0, 0.05]
    if x == "k":
        present = [(v, k) for v, k in zip(frame["mean"], frame["k"], strict=True) if not math.isnan(v)]
        smallest = min((v for v, _ in present), default=math.nan)
        # numpy's isclose: |a - b| <= 1e-8 + 1e-5 * |b|, b the smallest mean (equal infinities are close)
        close = [k for v, k in present if v == smallest or abs(v - smallest) <= 1e-8 + 1e-5 * abs(smallest)]
        close = [k for k in close if not math.isnan(k)]
        if not close:
            with pytest.raises(ValueError):
                best_k(frame)
        else:
            assert best_k(frame) == min(close)
