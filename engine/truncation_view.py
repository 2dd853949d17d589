"""What the Truncation page shows besides the live leaderboard: the K it opens on, the two
sensitivity curves and the Table-2 protocol summary, as frames the page only draws.

The curves follow paper 000's protocol (half-tie Bradley-Terry on the kept graphs, Spearman
distance to the reference), whatever ranker the sidebar holds, so nothing here depends on it.
Each x carries ``engine.curves``' numbers: ``mean`` over draws of 80 % of the kept graphs
without replacement (the paper's 25 → 20) with its 95 % interval ``ci_low``/``ci_high``, and the
``point`` estimate from all kept graphs at once. The pool is the selection's originals and
paraphrases (paper 000's Trunc pool; sampling replicates stay out), the same pool the live
leaderboard truncates (``engine.appstate.SliderContext``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

PAPER_KEEP = (25, 50)
"""Paper 000 keeps the 25 graphs of smallest S_mu out of each category's 50 (Table 2)."""

CURVE_DISTANCE = "spearman"
CURVE_COLUMNS = ["mean", "ci_low", "ci_high", "point", "q_low", "q_high", "n_kept", "n_draw"]


def default_keep_k(n_graphs: int) -> int:
    """The K the page opens on: the share of the pool paper 000 keeps (25 of 50, i.e. half)."""
    kept, pool = PAPER_KEEP
    return int(min(max(round(n_graphs * kept / pool), 1), n_graphs))


def _pick(frame: pd.DataFrame, x: str) -> pd.DataFrame:
    f = frame[(frame["distance"] == CURVE_DISTANCE) & (frame["category"] == "all")]
    return f[[x, *[c for c in CURVE_COLUMNS if c in f.columns]]].sort_values(x).reset_index(drop=True)


def keep_k_view(stack, reference, *, mu: float, resamples: int, seed: int) -> pd.DataFrame:
    """Spearman distance to the reference against K = 1 … T at this μ (columns k and
    ``CURVE_COLUMNS``), from ``engine.curves.keep_k_curve`` on the perturbed pool."""
    from .curves import keep_k_curve

    return _pick(keep_k_curve(stack, reference, mu=mu, per_category=False, pool="perturbed",
                              resamples=resamples, seed=seed), "k")


def mu_view(stack, reference, *, k: int, mus: Sequence[float], resamples: int, seed: int) -> pd.DataFrame:
    """Spearman distance against μ at this K (columns mu and ``CURVE_COLUMNS``), from
    ``engine.curves.mu_curve`` on the perturbed pool (μ values that keep the same graphs get the same
    numbers: its draws are common random numbers per graph)."""
    from .curves import mu_curve

    return _pick(mu_curve(stack, reference, [float(m) for m in mus], k=int(k), per_category=False, pool="perturbed",
                          resamples=resamples, seed=seed), "mu")


def best_k(curve: pd.DataFrame, column: str = "mean") -> int:
    """The smallest K where the curve (``mean`` by default) is at its minimum."""
    best = curve[column].min()
    return int(curve.loc[np.isclose(curve[column], best), "k"].min())


_POOL = re.compile(r"pool has (\d+) < keep (\d+)")


def _summarise_notes(notes: Sequence[str]) -> str:
    """Category notes of one protocol, each distinct part once; 'pool has n < keep K' merged."""
    parts: list[str] = []
    pools: dict[int, list[int]] = {}
    for note in notes:
        for part in (p.strip() for p in str(note).split(";")):
            m = _POOL.fullmatch(part)
            if m:
                pools.setdefault(int(m.group(2)), []).append(int(m.group(1)))
            elif part and part not in parts:
                parts.append(part)
    merged = []
    for keep, sizes in pools.items():
        lo, hi = min(sizes), max(sizes)
        merged.append(f"pools of {lo}{'' if lo == hi else f'–{hi}'} graphs < keep {keep}")
    return "; ".join(merged + parts)


def protocol_view(frame: pd.DataFrame, distance: str = "spearman", scale: float = 1000.0) -> pd.DataFrame:
    """``engine.resampling.run_protocols`` output as the page's table: one row per protocol with
    the macro cell and every category's cell (mean ± half-width × ``scale``, as ``table2``), how
    many category cells have no resampling spread, and why (the engine's notes, summarised)."""
    from .resampling import MACRO, table2

    cells = table2(frame, distance=distance, scale=scale)
    f = frame[frame["distance"] == distance]
    rows = []
    for label in cells.index:
        mine = f[(f["label"] == label) & (f["category"] != MACRO)]
        rows.append({
            "protocol": label,
            "no spread": f"{int(mine['degenerate'].sum())} of {len(mine)}",
            "why": _summarise_notes(mine.loc[mine["degenerate"], "note"].tolist()) or "—",
        })
    side = pd.DataFrame(rows).set_index("protocol")
    cols = [MACRO] + [c for c in cells.columns if c != MACRO]
    out = cells[cols].rename_axis("protocol").join(side)
    return out.reset_index()[["protocol", MACRO, "no spread", "why", *cols[1:]]]
