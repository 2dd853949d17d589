"""Hard non-transitivity PNT (paper 001, Section 3.1 eq. 2 and Appendix B.1) and the gap-vs-gap
heatmap of Appendix B.5.

Every fully compared model triple of every graph is classified by engine.triads.classify_triples
(27 outcome patterns, 14 non-transitive ones). PNT is the share of non-transitive triples, per
group: per judge, per dataset, or per model triple (over the prompts). Two sources:

- ``hard``: the graph's combined verdicts (``GraphStack.adj``);
- ``soft``: the judge's probabilities (``GraphStack.soft``, both orders averaged), read through the
  tie band of Appendix B.1: P(x beats y) inside [low, high] is a tie, above a win, below a loss
  (default band 0.475-0.525, a parameter).

Heatmap (Appendix B.5): for every ordered triple (x, y, z) the two gaps wr(x) − wr(y) and
wr(y) − wr(z) of model win rates place the triple's mean PNT (over graphs) and mean SNTD in a
grid × grid cell; cell means are smoothed by a Gaussian filter of width ``sigma`` cells applied to
sums and counts alike (so empty cells do not pull means to 0).
"""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
import pandas as pd
from scipy import ndimage

from ..errors import LensError
from ..graphs import GraphStack
from ..triads import classify_triples
from .sntd import sntd_triples

Source = Literal["hard", "soft"]
DEFAULT_TIE_BAND: tuple[float, float] = (0.475, 0.525)


def soft_stack(stack: GraphStack, tie_band: tuple[float, float] = DEFAULT_TIE_BAND) -> GraphStack:
    """The stack re-read from probabilities: i → j when P(i beats j) ≥ low (win or tie); pairs
    without a probability are not compared."""
    low, high = tie_band
    if not (0.0 <= low <= high <= 1.0):
        raise LensError(f"The tie band must satisfy 0 ≤ low ≤ high ≤ 1; got {low}-{high}.")
    if stack.soft is None or np.isnan(stack.soft).all():
        raise LensError("These verdicts carry no judge probabilities (prob_a), so soft PNT cannot be computed.")
    n = stack.n
    iu, ju = np.triu_indices(n, 1)
    p = stack.soft[:, iu, ju]  # P(i beats j) for i < j; the lower triangle is 1 − p
    has = ~np.isnan(p)
    adj = np.zeros_like(stack.adj)
    observed = np.zeros_like(stack.observed)
    adj[:, iu, ju] = has & (p >= low)
    adj[:, ju, iu] = has & (p <= high)
    observed[:, iu, ju] = has
    observed[:, ju, iu] = has
    return GraphStack(stack.models, adj, observed, stack.keys, f"soft {low}-{high}", stack.soft)


def pnt_triples(stack: GraphStack, *, source: Source = "hard",
                tie_band: tuple[float, float] = DEFAULT_TIE_BAND) -> pd.DataFrame:
    """classify_triples of the chosen source with the graph key columns joined in."""
    if source not in ("hard", "soft"):
        raise LensError(f"Unknown PNT source {source!r}; choose hard or soft.")
    s = soft_stack(stack, tie_band) if source == "soft" else stack
    tri = classify_triples(s)
    keys = stack.keys.reset_index(drop=True)
    out = keys.iloc[tri["graph"].to_numpy()].reset_index(drop=True)
    out = pd.concat([tri.reset_index(drop=True), out], axis=1)
    for c in ("model_a", "model_b", "model_c", "kind"):
        out[c] = out[c].astype(str)
    return out


def pnt_summary(stack: GraphStack, by: tuple[str, ...] = ("judge",), *, source: Source = "hard",
                tie_band: tuple[float, float] = DEFAULT_TIE_BAND) -> pd.DataFrame:
    """Per group: triples, non-transitive triples, PNT, and counts of the three non-transitive kinds
    (strict cycle, chain with tied ends, unchained ties). ``by`` may include model_a/b/c."""
    t = pnt_triples(stack, source=source, tie_band=tie_band)
    cols = [*by, "triples", "nontransitive", "pnt", "cycle", "tied_ends", "unchained_ties"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    t = t.assign(nt=(~t["transitive"]).astype(np.int64), cycle=(t["kind"] == "cycle").astype(np.int64),
                 tied_ends=(t["kind"] == "tied-ends").astype(np.int64),
                 unchained_ties=(t["kind"] == "unchained-ties").astype(np.int64))
    out = t.groupby(list(by), sort=True, dropna=False).agg(
        triples=("nt", "size"), nontransitive=("nt", "sum"), cycle=("cycle", "sum"),
        tied_ends=("tied_ends", "sum"), unchained_ties=("unchained_ties", "sum")).reset_index()
    out["pnt"] = out["nontransitive"] / out["triples"]
    return out[cols]


def model_win_rates(stack: GraphStack) -> pd.Series:
    """(wins + ties/2) / comparisons per model over the whole stack (the heatmap's default axis)."""
    wins = stack.wins.sum(axis=(0, 2)).astype(np.float64)
    ties = stack.ties.sum(axis=(0, 2)).astype(np.float64)
    games = stack.observed.sum(axis=(0, 2)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, (wins + ties / 2) / np.where(games > 0, games, 1), np.nan)
    return pd.Series(rate, index=list(stack.models), name="win_rate")


def gap_heatmap(stack: GraphStack, *, win_rates: pd.Series | None = None, grid: int = 35, sigma: float = 1.0,
                source: Source = "hard", tie_band: tuple[float, float] = DEFAULT_TIE_BAND) -> pd.DataFrame:
    """Mean PNT and SNTD of ordered model triples on a grid of (wr(a) − wr(b), wr(b) − wr(c)).

    One row per cell: gap_ab, gap_bc (cell centres), triples (ordered triples in the cell, before
    smoothing), pnt and sntd (smoothed cell means; NaN where no mass reaches the cell)."""
    if grid < 1:
        raise LensError(f"The heatmap grid needs at least one cell per axis; got {grid}.")
    wr = model_win_rates(stack) if win_rates is None else pd.Series(win_rates, dtype=np.float64)
    t = pnt_triples(stack, source=source, tie_band=tie_band)
    per = t.assign(nt=(~t["transitive"]).astype(float)).groupby(
        ["model_a", "model_b", "model_c"], sort=True)["nt"].mean()
    soft = sntd_triples(stack)
    sn = soft.groupby(["model_a", "model_b", "model_c"], sort=True)["sntd"].mean() if len(soft) else pd.Series(dtype=float)
    used = sorted({m for tri in set(per.index) | set(sn.index) for m in tri})
    missing = [m for m in used if m not in wr.index or np.isnan(wr[m])]
    if missing:
        raise LensError(f"No win rate for model(s) {', '.join(missing)}.")
    span = float(wr[used].max() - wr[used].min()) if used else 0.0
    span = span or 1.0
    edges = np.linspace(-span, span, grid + 1)
    sums = {k: np.zeros((grid, grid)) for k in ("pnt", "sntd")}
    counts = {k: np.zeros((grid, grid)) for k in ("pnt", "sntd")}
    raw = np.zeros((grid, grid))
    triples = sorted(set(per.index) | set(sn.index))
    for tri in triples:  # C(n, 3) model triples, each placed in its six orientations
        for x, y, z in itertools.permutations(tri):
            i = min(int(np.searchsorted(edges, wr[x] - wr[y], side="right")) - 1, grid - 1)
            j = min(int(np.searchsorted(edges, wr[y] - wr[z], side="right")) - 1, grid - 1)
            raw[i, j] += 1
            for k, series in (("pnt", per), ("sntd", sn)):
                if tri in series.index:
                    sums[k][i, j] += series[tri]
                    counts[k][i, j] += 1
    centres = (edges[:-1] + edges[1:]) / 2
    out = pd.DataFrame({"gap_ab": np.repeat(centres, grid), "gap_bc": np.tile(centres, grid),
                        "triples": raw.ravel().astype(np.int64)})
    for k in ("pnt", "sntd"):
        s, c = sums[k], counts[k]
        if sigma > 0:
            s = ndimage.gaussian_filter(s, sigma, mode="constant")
            c = ndimage.gaussian_filter(c, sigma, mode="constant")
        with np.errstate(invalid="ignore", divide="ignore"):
            out[k] = np.where(c > 1e-12, s / np.where(c > 1e-12, c, 1.0), np.nan).ravel()
    return out
