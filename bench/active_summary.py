"""Markdown summary of the curves bench/active_curves.py wrote: per pool, seed-mean accuracy at a quarter,
half and the whole budget, and the calls ``uncertainty`` needs to match random's Kendall distance.

    python bench/active_summary.py docs/notes/active
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def accuracy_table(path: Path) -> str:
    from engine.views.active_curves import calls_to_match, mean_curve

    curves = pd.read_csv(path)
    grid = np.sort(curves["calls"].unique())
    points = [grid[len(grid) // 4], grid[len(grid) // 2], grid[-1]]
    lines = [f"**{path.stem}** (points at {', '.join(f'{p:,}' for p in points)} calls)", "",
             "| strategy | " + " | ".join(f"Kendall @{p:,}" for p in points)
             + " | " + " | ".join(f"top-5 @{p:,}" for p in points) + " |",
             "| --- |" + " ---: |" * (2 * len(points))]
    kendall, top5 = mean_curve(curves, "kendall"), mean_curve(curves, "top5")
    for s in kendall.columns:
        lines.append(f"| {s} | " + " | ".join(f"{kendall.loc[p, s]:.4f}" for p in points) + " | "
                     + " | ".join(f"{top5.loc[p, s]:.3f}" for p in points) + " |")
    ratios = []
    for n in grid[1:]:
        need = calls_to_match(curves, "uncertainty", "random", "kendall", int(n))
        ratios.append(need / n)
    r = np.asarray(ratios)
    lines += ["", "uncertainty / random calls to equal Kendall distance, over "
              f"N = {grid[1]:,} … {grid[-1]:,}: median {np.nanmedian(r):.2f}, best {np.nanmin(r):.2f}, "
              f"worst {np.nanmax(r):.2f}; "
              f"<= 0.6 at {int((r <= 0.6).sum())} of {len(r)} budgets.", ""]
    return "\n".join(lines)


def triads_table(path: Path) -> str:
    """Bad triads removed per call at a tenth, a quarter and half of the re-judging budget, per strategy
    (random, random with cycles' settling rule when the run has it, cycles)."""
    curves = pd.read_csv(path)
    table = curves.pivot_table(index="calls", columns="strategy", values="bad_triads", aggfunc="mean")
    start = table.iloc[0]
    pts = [table.index[len(table) // 10], table.index[len(table) // 4], table.index[len(table) // 2]]
    cols = [c for c in ("random", "random-settling", "cycles") if c in table.columns]
    lines = [f"**{path.stem}**: bad triads at the start {start.iloc[0]:.1f}; removed per call "
             "(negative: added)", "", "| calls | " + " | ".join(cols) + " |",
             "| ---: |" + " ---: |" * len(cols)]
    for p in pts:
        per = (start - table.loc[p]) / p
        lines.append(f"| {p:,} | " + " | ".join(f"{per[c]:+.3f}" for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    folder = Path(sys.argv[1])
    for path in sorted(folder.glob("*.csv")):
        print(triads_table(path) if path.stem.endswith("_triads") else accuracy_table(path))


if __name__ == "__main__":
    main()
