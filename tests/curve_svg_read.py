"""Read a Truncation sensitivity curve back from its inline SVG (``app_pages._curve_figure.curve_svg``) and
the rows it was drawn from (``curve_rows``, which the page keeps on the server): the numbers each marker
carries, the pixels drawn, the lines and texts, so tests compare a drawn curve with curves computed from
scratch and with the closed-form data -> pixel mapping."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np

NS = "{http://www.w3.org/2000/svg}"


def _xy(text: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in re.findall(r"(-?[\d.]+),(-?[\d.]+)", text)]


NAN = float("nan")
"""One NaN object for every NaN read: Python's == on lists and dicts takes an object as equal to itself,
so two readings of the same numbers compare equal, NaN included."""


def _numbers(rows) -> list[list[float]]:
    """The rows as lists of Python floats, every NaN the one ``NAN``."""
    table = np.asarray(rows, dtype=np.float64).reshape(-1, 5).tolist()
    return [[v if v == v else NAN for v in r] for r in table]


def read_curve(markup: str, rows) -> dict:
    """The curve's markup (a div holding the SVG) parsed as XML (so unescaped markup fails here) together
    with ``rows``, the numbers it was drawn from (``app_pages._curve_figure.curve_rows``: x, mean, ci_low,
    ci_high, point per marker; the markup does not carry them at full precision). The markup is checked
    against the rows at the digits it shows: a dot per row, each at the closed-form pixel of its x and mean
    (2 decimals, from the svg's axes and plot rectangle), and the line of its hover covering its x reading
    its numbers to 4 decimals. Returned: root attributes, the plot rectangle, the markers (numbers from
    ``rows``, each dot's cx, cy from the markers' path, the hover strip [lo, hi) over the dot, its title and
    the title's line covering the marker's x), the hover strips (``hits``: title, strip, lines), band
    polygons and line pieces (pixel pairs), the setting / best lines, every text by class, and the markers'
    drawing attributes."""
    rows = _numbers(rows)
    wrapper = ET.fromstring(markup)
    assert wrapper.tag == "div" and len(wrapper) == 1, markup[:200]
    root = wrapper[0]
    assert root.tag == f"{NS}svg", root.tag
    els = list(root.iter())
    rect = next(e for e in els if e.get("class") == "plot")
    left, top = float(rect.get("x")), float(rect.get("y"))
    assert root.get("data-points") is None  # the numbers stay on the server (curve_rows)
    dots_el = [e for e in els if e.get("class") == "markers"]
    assert len(dots_el) <= 1
    dots = [(float(a), float(b)) for a, b in re.findall(r"M(-?[\d.]+),(-?[\d.]+)h0", dots_el[0].get("d"))] \
        if dots_el else []
    # the whole d is nothing but those dots (no other piece drawn in the markers' colour)
    assert not dots_el or re.fullmatch(r"(M-?[\d.]+,-?[\d.]+h0)+", dots_el[0].get("d"))
    groups = [e for e in els if e.get("class") == "hits"]
    hits = []
    for e in (e for g in groups for e in g):  # "M lo,top H hi V bottom H lo z": a strip of the plot's height
        m = re.fullmatch(r"M(-?[\d.]+),(-?[\d.]+)H(-?[\d.]+)V(-?[\d.]+)H(-?[\d.]+)z", e.get("d"))
        assert m is not None and m[1] == m[5], e.get("d")
        assert (float(m[2]), float(m[4])) == (top, top + float(rect.get("height"))), e.get("d")
        hits.append({"title": e.find(f"{NS}title").text, "strip": (float(m[1]), float(m[3])),
                     "lines": hover_lines(e.find(f"{NS}title").text)})
    assert len(rows) == len(dots), (len(rows), len(dots))
    px, py = _pixels(root, rect)
    markers = []
    for r, d in zip(rows, dots, strict=True):
        # the dot at its row's pixel, as drawn (2 decimals)
        assert abs(d[0] - px(r[0])) <= 0.0051 and abs(d[1] - py(r[1])) <= 0.0051, (r, d)
        # the strip over the dot (exactly one), and the line of its hover that covers the marker's x
        over = [h for h in hits if h["strip"][0] < d[0] < h["strip"][1]]
        assert len(over) == 1, (d, over)
        shown = float(f"{r[0]:g}")  # x as the hover writes it
        line = [ln for ln in over[0]["lines"] if float(ln["a"]) <= shown <= float(ln["b"])]
        assert len(line) == 1, (r, over[0]["title"])
        # ... reading the row's numbers as the hover writes them
        assert [line[0][k] for k in ("mean", "lo", "hi", "point")] == [f"{v:.4f}" for v in r[1:]], (r, line)
        markers.append({"x": r[0], "mean": r[1], "lo": r[2], "hi": r[3], "point": r[4], "cx": d[0],
                        "cy": d[1], "hover": over[0]["title"], "line": line[0], "strip": over[0]["strip"]})

    def lines(cls: str) -> list[list[tuple[float, float]]]:
        return [_xy(piece) for e in els if e.get("class") == cls for piece in e.get("d").split("M")[1:]]

    def texts(cls: str | None) -> list[str]:
        return [e.text for e in els if e.tag == f"{NS}text" and e.get("class") == cls]

    return {
        "root": dict(root.attrib), "x_lo": float(root.get("data-x-lo")), "x_hi": float(root.get("data-x-hi")),
        "y_lo": float(root.get("data-y-lo")), "y_hi": float(root.get("data-y-hi")),
        "plot": (left, left + float(rect.get("width")), top, top + float(rect.get("height"))),
        "markers": markers,
        "band": [_xy(e.get("points")) for e in els if e.get("class") == "band"],
        "mean": lines("mean"), "point": lines("point"),
        "setting": [float(e.get("data-at")) for e in els if e.get("class") == "setting"],
        "best": [float(e.get("data-at")) for e in els if e.get("class") == "best"],
        "xticks": texts("xtick"), "yticks": texts("ytick"), "texts": texts(None),
        "hits": hits,
        "marker_style": {k: v for k, v in dots_el[0].attrib.items() if k != "d"} if dots_el else None,
        "hit_style": dict(groups[0].attrib) if groups else None,
    }


def _pixels(root: ET.Element, rect: ET.Element):
    """The closed-form data -> pixel mapping of the svg's axes (``data-x-lo`` … ``data-log``) onto its plot
    rectangle: x linear, or linear in log10 x; y with ``data-y-hi`` at the top."""
    left, top = float(rect.get("x")), float(rect.get("y"))
    right, bottom = left + float(rect.get("width")), top + float(rect.get("height"))
    f = math.log10 if root.get("data-log") == "1" else float
    x_lo, x_hi = f(float(root.get("data-x-lo"))), f(float(root.get("data-x-hi")))
    y_lo, y_hi = float(root.get("data-y-lo")), float(root.get("data-y-hi"))
    return (lambda v: left + (f(v) - x_lo) / (x_hi - x_lo) * (right - left),
            lambda v: bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top))


def page_curves(at) -> list[dict]:
    """The sensitivity curves an AppTest run of the Truncation page drew (keep-K first), each read with
    the numbers the page kept for it on the server (session state ``CURVES_DRAWN``: the rows its markup was
    drawn from)."""
    from app_pages._curve_figure import CURVES_DRAWN

    drawn = at.session_state[CURVES_DRAWN]
    out = []
    for m in (m for m in at.markdown if "curve-svg" in m.value):
        x = re.search(r'class="curve-svg" data-x="(\w+)"', m.value)
        assert x is not None, m.value[:300]
        out.append(read_curve(m.value, drawn[x[1]]))
    return out


HOVER_LINE = re.compile(
    r"(?P<x>k|mu) = (?P<a>[^ :\n]+)(?: … (?P<b>[^ :\n]+))?(?P<sep>:|\n)\s?mean (?P<mean>\S+?),?\s"
    r"95 % interval (?P<lo>\S+) … (?P<hi>\S+?),?\sall kept graphs (?P<point>\S+)")


def hover_lines(title: str) -> list[dict]:
    """A hover strip's title read back as its lines, each ``x = a`` or ``x = a … b`` (a run of markers whose
    numbers read the same) with those numbers as written (``mean``, ``lo``, ``hi``, ``point``): one run
    written over four lines, or several runs one line each. The whole title must be such lines."""
    found = list(HOVER_LINE.finditer(title))
    assert found and "\n".join(m[0] for m in found) == title, title
    assert len(found) == 1 or all(m["sep"] == ":" for m in found), title
    return [{**m.groupdict(), "b": m["b"] or m["a"]} for m in found]


def read_setting(markup: str) -> dict:
    """The setting's overlay (``app_pages._curve_figure.setting_svg``) parsed as XML: the wrapper's style
    (how it is lifted onto the curve), the SVG's viewBox and x, and each red line's data-at and pixel
    column."""
    wrapper = ET.fromstring(markup)
    svg = wrapper.find(f"{NS}svg")
    assert svg is not None and svg.get("class") == "curve-setting", markup[:200]
    lines = [e for e in svg.iter() if e.get("class") == "setting"]
    return {"style": wrapper.get("style"), "viewBox": svg.get("viewBox"), "x": svg.get("data-x"),
            "setting": [float(e.get("data-at")) for e in lines], "x1": [float(e.get("x1")) for e in lines],
            "elements": len(list(svg.iter())) - 1}
