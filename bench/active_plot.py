"""A small SVG line plot (no plotting package is installed here): one line per column of a table."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import pandas as pd

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def svg_lines(
    table: pd.DataFrame, path: Path, title: str, ylabel: str, width: int = 640, height: int = 360
) -> None:
    """Write ``table`` (index: x values, columns: one line each) as an SVG line plot to ``path``."""
    left, right, top, bottom = 60, 130, 30, 45
    x = table.index.to_numpy(dtype=float)
    y = table.to_numpy(dtype=float)
    x0, x1 = float(np.nanmin(x)), float(np.nanmax(x))
    y0, y1 = float(np.nanmin(y)), float(np.nanmax(y))
    if y1 == y0:
        y1 = y0 + 1.0
    pw, ph = width - left - right, height - top - bottom

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0 or 1.0) * pw

    def sy(v: float) -> float:
        return top + (1.0 - (v - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>',
           f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle">calls spent</text>',
           f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" '
           f'text-anchor="middle">{escape(ylabel)}</text>']
    for v in np.linspace(x0, x1, 5):
        out.append(f'<text x="{sx(v):.1f}" y="{top + ph + 15}" text-anchor="middle">{v:,.0f}</text>')
    for v in np.linspace(y0, y1, 5):
        out.append(f'<text x="{left - 5}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    for k, col in enumerate(table.columns):
        colour = COLOURS[k % len(COLOURS)]
        pts = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(x, y[:, k], strict=True) if np.isfinite(b))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        ly = top + 14 * k + 6
        out.append(f'<line x1="{left + pw + 10}" y1="{ly}" x2="{left + pw + 28}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"/><text x="{left + pw + 32}" y="{ly + 4}">{escape(str(col))}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
