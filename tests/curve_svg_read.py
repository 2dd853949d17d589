"""Read a Truncation sensitivity curve back from its inline SVG (``app_pages._curve_figure.curve_svg``):
the numbers each marker carries, the pixels drawn, the lines and texts, so tests compare a drawn curve
with curves computed from scratch and with the closed-form data -> pixel mapping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def _xy(text: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in re.findall(r"(-?[\d.]+),(-?[\d.]+)", text)]


def read_curve(svg: str) -> dict:
    """The SVG parsed as XML (so unescaped markup fails here): root attributes, the plot rectangle,
    the markers (their data- numbers, cx, cy, hover text), band polygons and line pieces (pixel pairs),
    the setting / best lines and every text by class."""
    root = ET.fromstring(svg)
    els = list(root.iter())
    rect = next(e for e in els if e.get("class") == "plot")
    left, top = float(rect.get("x")), float(rect.get("y"))
    markers = [{"x": float(e.get("data-x")), "mean": float(e.get("data-mean")), "lo": float(e.get("data-lo")),
                "hi": float(e.get("data-hi")), "point": float(e.get("data-point")), "cx": float(e.get("cx")),
                "cy": float(e.get("cy")), "hover": e.find(f"{NS}title").text}
               for e in els if e.get("class") == "marker"]

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
    }


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
