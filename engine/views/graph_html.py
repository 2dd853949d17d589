"""Self-contained HTML for the inspector's tournament graphs (vis-network, the library pyvis wraps).

One page holds several panels side by side (before denoising, after PGED or ELSPR) that share
fixed node positions, so the eye can compare them and picking a triad redraws without a new
physics layout. vis-network's script is read from the pyvis package and inlined once; there is no
CDN, Bootstrap or other network request, so the page works offline. Panel titles, node labels and
tooltips travel as JSON inside the script with ``<``, ``>`` and ``&`` written as unicode escapes
(a name cannot close the script block); vis-network draws labels on a canvas and sets tooltips
with ``innerText``, and titles are set with ``textContent``, so every string shows as text.

This module only encodes pictures (``Panel`` → HTML); what an edge means comes from
``engine.views.inspector``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from engine.errors import LensError

VIS_JS = ("templates", "lib", "vis-9.1.2", "vis-network.min.js")
"""Where pyvis keeps the vis-network build it ships (read once, inlined into every page)."""

# Colours: muted grey edges, red for bad-triad load (light → dark with the count), violet for the
# selected triad, teal for what denoising changed, orange for what it removed.
GREY = "#aab2bf"
FAINT = "#dfe3ea"
RED_LIGHT = (0xF5, 0xB5, 0xB5)
RED_DARK = (0xC9, 0x2A, 0x2A)
VIOLET = "#6741d9"
TEAL = "#0c8599"
TEAL_LIGHT = "#3bc9db"
TEAL_FAINT = "#99e9f2"
ORANGE = "#e8590c"
NODE = "#3b5bdb"
NODE_MUTED = "#91a7ff"


@dataclass(frozen=True)
class Panel:
    """One network drawing: a title line, vis-network node and edge dicts (positions fixed)."""

    title: str
    nodes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)


def script_safe_json(obj: object) -> str:
    """JSON that cannot close a ``<script>`` block: ``<``, ``>``, ``&`` as unicode escapes."""
    text = json.dumps(obj, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1)
def vis_network_js() -> str:
    """The vis-network script shipped inside pyvis (about 470 kB, read once per process; pyvis itself
    is not imported, its import pulls in IPython and costs seconds)."""
    spec = find_spec("pyvis")
    if spec is None or spec.origin is None:
        raise LensError(
            "The pyvis package is not installed; it ships the vis-network script the graphs need."
        )
    return Path(spec.origin).parent.joinpath(*VIS_JS).read_text(encoding="utf-8")


def circle_positions(
    order: list[int] | tuple[int, ...], radius: float = 190.0
) -> dict[int, tuple[float, float]]:
    """Node positions on a circle, ``order[0]`` at the top and the rest clockwise."""
    m = len(order)
    out = {}
    for k, v in enumerate(order):
        angle = -np.pi / 2 + 2 * np.pi * k / max(m, 1)
        out[int(v)] = (round(float(radius * np.cos(angle)), 1), round(float(radius * np.sin(angle)), 1))
    return out


def red_shade(share: float) -> str:
    """A red from light (share → 0) to dark (share = 1): how loaded an edge is with bad triads."""
    s = min(max(float(share), 0.0), 1.0)
    rgb = [round(lo + (hi - lo) * s) for lo, hi in zip(RED_LIGHT, RED_DARK, strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def edge(i: int, j: int, *, color: str, width: float, title: str, arrow: bool = True,
         dashes: bool | list[int] = False, opacity: float = 1.0) -> dict:
    """A vis-network edge dict (``i → j``; ``arrow`` False draws an undirected link)."""
    return {
        "from": int(i), "to": int(j), "title": title, "width": float(width), "dashes": dashes,
        "color": {"color": color, "highlight": color, "hover": color, "opacity": float(opacity)},
        "arrows": {"to": {"enabled": bool(arrow), "scaleFactor": 0.6}},
    }


def node(i: int, label: str, pos: tuple[float, float], *, color: str, size: float, title: str,
         border: str | None = None) -> dict:
    """A vis-network node dict at a fixed position."""
    return {
        "id": int(i), "label": label, "title": title, "x": pos[0], "y": pos[1], "shape": "dot",
        "size": float(size), "borderWidth": 3 if border else 1,
        "color": {"background": color, "border": border or color,
                  "highlight": {"background": color, "border": border or color}},
        "font": {"size": 15, "color": "#1f2430", "strokeWidth": 4, "strokeColor": "#ffffff"},
    }


OPTIONS = {
    "physics": {"enabled": False},
    "edges": {"smooth": False, "selectionWidth": 0, "hoverWidth": 0.5},
    "nodes": {"fixed": {"x": True, "y": True}},
    "interaction": {"hover": True, "tooltipDelay": 80, "dragNodes": False, "zoomView": True,
                    "dragView": True, "navigationButtons": False, "keyboard": False},
}

CSS = (
    "html,body{margin:0;padding:0;font-family:'Source Sans Pro','Source Sans',sans-serif;color:#1f2430;"
    "background:#fff}.row{display:flex;gap:12px}.panel{flex:1 1 0;min-width:0;border:1px solid #e6e9ef;"
    "border-radius:8px;overflow:hidden}.title{font-size:14px;font-weight:600;padding:8px 12px;"
    "border-bottom:1px solid #eef0f4;background:#f8f9fb;overflow-wrap:anywhere}.net{width:100%}"
    "div.vis-tooltip{position:absolute;visibility:hidden;"
    "padding:5px 8px;white-space:nowrap;font-size:13px;color:#1f2430;background:#fff;"
    "border:1px solid #c5cad3;border-radius:4px;box-shadow:0 2px 6px rgba(0,0,0,.15);"
    "pointer-events:none;z-index:5}"
)

SCRIPT = """
var PANELS = %(panels)s;
var OPTIONS = %(options)s;
var row = document.getElementById("row");
var boxes = PANELS.map(function (p) {
  var box = document.createElement("div"); box.className = "panel";
  var title = document.createElement("div"); title.className = "title"; title.textContent = p.title;
  title.title = p.title;
  var net = document.createElement("div"); net.className = "net"; net.style.height = "%(height)dpx";
  box.appendChild(title); box.appendChild(net); row.appendChild(box);
  return net;
});
// vis-network's own fit frames the nodes' dots, and a label under a dot at the edge fell outside the
// frame (70 names on a circle): frame the union of every node's box with its label instead
function fitLabels(net, ids, el) {
  var b = null;
  ids.forEach(function (id) {
    var r = net.getBoundingBox(id);
    b = b ? {left: Math.min(b.left, r.left), right: Math.max(b.right, r.right),
             top: Math.min(b.top, r.top), bottom: Math.max(b.bottom, r.bottom)} : r;
  });
  if (!b) return;
  var pad = 12, w = Math.max(b.right - b.left, 1), h = Math.max(b.bottom - b.top, 1);
  var scale = Math.min((el.clientWidth - 2 * pad) / w, (el.clientHeight - 2 * pad) / h);
  net.moveTo({position: {x: (b.left + b.right) / 2, y: (b.top + b.bottom) / 2}, scale: scale,
              animation: false});
}
window.lensNetworks = PANELS.map(function (p, k) {
  var net = new vis.Network(boxes[k], {nodes: new vis.DataSet(p.nodes), edges: new vis.DataSet(p.edges)},
                            OPTIONS);
  var ids = p.nodes.map(function (n) { return n.id; });
  net.once("afterDrawing", function () { fitLabels(net, ids, boxes[k]); });
  return net;
});
"""


def network_page(panels: list[Panel], height_px: int = 430) -> str:
    """One HTML page drawing ``panels`` side by side (vis-network inlined, no external resource)."""
    data = [{"title": p.title, "nodes": p.nodes, "edges": p.edges} for p in panels]
    script = SCRIPT % {
        "panels": script_safe_json(data),
        "options": json.dumps(OPTIONS),
        "height": int(height_px),
    }
    return (
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>" + CSS + "</style>"
        "<script>" + vis_network_js() + "</script></head>"
        "<body><div class=\"row\" id=\"row\"></div><script>" + script + "</script></body></html>"
    )


def page_panels(page: str) -> list[dict]:
    """The panels embedded in a page made by ``network_page`` (for tests and checks)."""
    start = page.index("var PANELS = ") + len("var PANELS = ")
    end = page.index(";\nvar OPTIONS", start)
    return json.loads(page[start:end])
