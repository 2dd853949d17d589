"""Hard non-transitivity PNT (paper 001, Section 3.1 eq. 2 and Appendix B.1) and the gap-vs-gap
heatmap of Appendix B.5.

Every fully compared model triple of every graph is classified by engine.graphs.triads.classify_triples
(27 outcome patterns, 14 non-transitive ones). PNT is the share of non-transitive triples, per
group: per judge, per dataset, or per model triple (over the prompts). Two sources:

- ``hard``: the graph's combined verdicts (``GraphStack.adj``);
- ``soft``: the judge's probabilities (``GraphStack.soft``, both orders averaged), read through the
  tie band of Appendix B.1: P(x beats y) inside [low, high] is a tie, above a win, below a loss
  (default band 0.475-0.525, a parameter).

Patterns: ``pattern_summary`` counts each of the 14 non-transitive patterns of Appendix B.1 (numbered
1..14 as in engine.graphs.triads; A < B < C are the triple's models in name order) per group.

Heatmap (Appendix B.5), one grid per judge (or per ``by`` group): for every ordered triple (x, y, z) the two
gaps wr(x) − wr(y) and
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

from engine.diagnostics.sntd import sntd_triples
from engine.errors import LensError
from engine.graphs.buckets import Bucket, GraphBuckets, as_buckets
from engine.graphs.stack import GraphStack
from engine.graphs.triads import PATTERNS, classify_triples

Source = Literal["hard", "soft"]
DEFAULT_TIE_BAND: tuple[float, float] = (0.475, 0.525)


def soft_stack(stack: GraphStack | GraphBuckets, tie_band: tuple[float, float] = DEFAULT_TIE_BAND):
    """The graphs re-read from probabilities: i → j when P(i beats j) ≥ low (win or tie); pairs
    without a probability are not compared. A GraphStack gives a GraphStack, GraphBuckets give
    GraphBuckets (each bucket re-read over its own models)."""
    low, high = tie_band
    if not (0.0 <= low <= high <= 1.0):
        raise LensError(f"The tie band must satisfy 0 ≤ low ≤ high ≤ 1; got {low}-{high}.")
    if isinstance(stack, GraphBuckets):
        if not stack.has_soft:
            raise LensError(
                "These verdicts carry no judge probabilities (prob_a), so soft PNT cannot be computed."
            )
        out = []
        for bk in stack.buckets:
            if bk.soft is None:
                continue
            adj, observed = _soft_edges(bk.soft, low, high)
            out.append(Bucket(bk.graph, bk.members, adj, observed, bk.soft))
        return GraphBuckets(stack.models, stack.keys, tuple(out), f"soft {low}-{high}", stack.invalid_only)
    if stack.soft is None or np.isnan(stack.soft).all():
        raise LensError(
            "These verdicts carry no judge probabilities (prob_a), so soft PNT cannot be computed."
        )
    adj, observed = _soft_edges(stack.soft, low, high)
    return GraphStack(stack.models, adj, observed, stack.keys, f"soft {low}-{high}", stack.soft)


def _soft_edges(soft: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """(adj, observed) of a (T, n, n) probability array read through the tie band."""
    n = soft.shape[-1]
    iu, ju = np.triu_indices(n, 1)
    p = soft[:, iu, ju]  # P(i beats j) for i < j; the lower triangle is 1 − p
    has = ~np.isnan(p)
    adj = np.zeros(soft.shape, dtype=bool)
    observed = np.zeros(soft.shape, dtype=bool)
    adj[:, iu, ju] = has & (p >= low)
    adj[:, ju, iu] = has & (p <= high)
    observed[:, iu, ju] = has
    observed[:, ju, iu] = has
    return adj, observed


def pnt_triples(stack: GraphStack | GraphBuckets, *, source: Source = "hard",
                tie_band: tuple[float, float] = DEFAULT_TIE_BAND) -> pd.DataFrame:
    """classify_triples of the chosen source with the graph key columns joined in (a GraphStack
    or GraphBuckets; only graphs of at least 3 models hold a triple)."""
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


def pnt_summary(
    stack: GraphStack | GraphBuckets,
    by: tuple[str, ...] = ("judge",),
    *,
    source: Source = "hard",
    tie_band: tuple[float, float] = DEFAULT_TIE_BAND,
) -> pd.DataFrame:
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


def pattern_summary(
    stack: GraphStack | GraphBuckets,
    by: tuple[str, ...] = ("judge",),
    *,
    source: Source = "hard",
    tie_band: tuple[float, float] = DEFAULT_TIE_BAND,
) -> pd.DataFrame:
    """Per group and each non-transitive pattern 1..14 of paper 001 B.1 (all 14 rows per group, zero
    counts included): the pattern's outcomes (A vs B, B vs C, A vs C with A < B < C by model name),
    its kind, the triples showing it and their share of all triples and of the non-transitive ones."""
    t = pnt_triples(stack, source=source, tie_band=tie_band)
    nt = PATTERNS[PATTERNS["pnt_pattern"] > 0].sort_values("pnt_pattern")
    pats = pd.DataFrame({
        "pnt_pattern": nt["pnt_pattern"].astype(np.int64).to_numpy(),
        "outcomes": ["A{}B, B{}C, A{}C".format(*o.split()) for o in nt["outcomes"]],
        "kind": nt["kind"].to_numpy(),
    })
    cols = [*by, "pnt_pattern", "outcomes", "kind", "triples", "share_of_triples", "share_of_nontransitive"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    groups = t.groupby(list(by), sort=True, dropna=False)
    total = groups.size().rename("all_triples").reset_index()
    counts = (
        t[t["pnt_pattern"] > 0]
        .groupby([*by, "pnt_pattern"], sort=True, dropna=False)
        .size()
        .rename("triples")
    )
    out = total.merge(pats, how="cross")
    out = out.merge(
        counts.reset_index().astype({"pnt_pattern": np.int64}), on=[*by, "pnt_pattern"], how="left"
    )
    out["triples"] = out["triples"].fillna(0).astype(np.int64)
    nontrans = out.groupby(list(by), sort=False, dropna=False)["triples"].transform("sum")
    out["share_of_triples"] = out["triples"] / out["all_triples"]
    out["share_of_nontransitive"] = np.where(
        nontrans > 0, out["triples"] / nontrans.where(nontrans > 0, 1), np.nan
    )
    return out[cols].sort_values([*by, "pnt_pattern"]).reset_index(drop=True)


def model_win_rates(stack: GraphStack | GraphBuckets) -> pd.Series:
    """(wins + ties/2) / comparisons per model over all graphs (the heatmap's default axis)."""
    b = as_buckets(stack)
    n = b.n
    wins, ties, games = np.zeros(n), np.zeros(n), np.zeros(n)
    for bk in b.buckets:
        a = bk.adj
        back = a.swapaxes(1, 2)
        np.add.at(wins, bk.members, (a & ~back).sum(axis=2))
        np.add.at(ties, bk.members, (a & back).sum(axis=2))
        np.add.at(games, bk.members, bk.observed.sum(axis=2))
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, (wins + ties / 2) / np.where(games > 0, games, 1), np.nan)
    return pd.Series(rate, index=list(b.models), name="win_rate")


def read_win_rates(frame: pd.DataFrame, source: str = "the win-rate file") -> pd.Series:
    """A ``model,win_rate`` table (e.g. AlpacaEval's leaderboard) as a Series for ``gap_heatmap``.

    Rates are taken in the file's own units (shares or percentages: only their differences matter,
    and the grid spans them). Bad input raises LensError naming the line (the header is line 1)."""
    cols = {str(c).strip().lower(): c for c in frame.columns}
    missing = [c for c in ("model", "win_rate") if c not in cols]
    if missing:
        raise LensError(f"{source} needs the columns model and win_rate; it lacks {', '.join(missing)}.")
    models = frame[cols["model"]].astype("string").str.strip()
    rates = pd.to_numeric(frame[cols["win_rate"]], errors="coerce")
    for i in range(len(frame)):  # a small file: one message for the first bad row
        if pd.isna(models.iloc[i]) or models.iloc[i] == "":
            raise LensError(f"{source}, line {i + 2}: the model name is empty.")
        if pd.isna(rates.iloc[i]) or not np.isfinite(rates.iloc[i]):
            raise LensError(
                f"{source}, line {i + 2}: win_rate {frame[cols['win_rate']].iloc[i]!r} is not a number."
            )
    dup = models[models.duplicated()]
    if len(dup):
        raise LensError(f"{source}, line {int(dup.index[0]) + 2}: model {dup.iloc[0]!r} appears twice.")
    if len(frame) == 0:
        raise LensError(f"{source} has no rows.")
    return pd.Series(rates.to_numpy(np.float64), index=models.to_list(), name="win_rate", dtype=np.float64)


def _place(
    tri_models: np.ndarray, wr: pd.Series, edges: np.ndarray, grid: int
) -> tuple[np.ndarray, np.ndarray]:
    """Cell rows / columns of the six orientations of each (K, 3) model triple: arrays (6, K)."""
    rate = wr.reindex(tri_models.ravel()).to_numpy(np.float64).reshape(tri_models.shape)
    perms = np.array(list(itertools.permutations(range(3))), dtype=np.int64)  # (6, 3)
    r = rate[:, perms].transpose(1, 0, 2)  # (6, K, 3): rates of (x, y, z) per orientation

    def cell(gap: np.ndarray) -> np.ndarray:
        return np.asarray(np.clip(np.searchsorted(edges, gap, side="right") - 1, 0, grid - 1))

    return cell(r[..., 0] - r[..., 1]), cell(r[..., 1] - r[..., 2])


def gap_heatmap(
    stack: GraphStack | GraphBuckets,
    *,
    by: tuple[str, ...] = ("judge",),
    win_rates: pd.Series | dict | None = None,
    grid: int = 35,
    sigma: float = 1.0,
    source: Source = "hard",
    tie_band: tuple[float, float] = DEFAULT_TIE_BAND,
) -> pd.DataFrame:
    """Mean PNT and SNTD of ordered model triples on a grid of (wr(a) − wr(b), wr(b) − wr(c)), per
    group (default: per judge, so judges are never mixed).

    ``win_rates``: one rate per model (e.g. AlpacaEval's, as paper 001 uses; ``read_win_rates``),
    the same for every group; default: each group's own (wins + ties/2) / comparisons. The grid
    spans ±(max − min) of the rates of the group's models. One row per group and cell: the ``by``
    columns, gap_ab, gap_bc (cell centres, rounded to 12 decimals so the centre cell prints 0),
    triples (ordered triples in the cell, before smoothing), pnt and sntd (smoothed cell means; NaN
    where no mass reaches the cell)."""
    if grid < 1:
        raise LensError(f"The heatmap grid needs at least one cell per axis; got {grid}.")
    if sigma < 0:
        raise LensError(f"The heatmap smoothing sigma must be at least 0; got {sigma}.")
    given = None if win_rates is None else pd.Series(win_rates, dtype=np.float64)
    stack = as_buckets(stack)
    t = pnt_triples(stack, source=source, tie_band=tie_band)
    t = t.assign(nt=(~t["transitive"]).astype(float))
    soft = sntd_triples(stack)
    tri_cols = ["model_a", "model_b", "model_c"]
    graph_groups = stack.keys.reset_index(drop=True).groupby(list(by), sort=True, dropna=False).indices
    frames = []
    for key, idx in graph_groups.items():  # a handful of judges: one grid each
        key = key if isinstance(key, tuple) else (key,)
        in_group = np.zeros(stack.T, dtype=bool)
        in_group[idx] = True
        per = t[in_group[t["graph"].to_numpy()]].groupby(tri_cols, sort=True)["nt"].mean()
        s = soft[in_group[soft["graph"].to_numpy()]] if len(soft) else soft
        sn = s.groupby(tri_cols, sort=True)["sntd"].mean() if len(s) else pd.Series(dtype=float)
        triples = sorted(set(per.index) | set(sn.index))
        if not triples:
            continue
        wr = model_win_rates(stack.subset(idx)) if given is None else given
        used = sorted({m for tri in triples for m in tri})
        missing = [m for m in used if m not in wr.index or np.isnan(wr[m])]
        if missing:
            raise LensError(f"No win rate for model(s) {', '.join(missing)}.")
        span = float(wr[used].max() - wr[used].min()) or 1.0
        edges = np.linspace(-span, span, grid + 1)
        tri = np.array(triples, dtype=object)
        rows, cols = _place(tri, wr, edges, grid)
        raw = np.zeros((grid, grid))
        np.add.at(raw, (rows.ravel(), cols.ravel()), 1.0)
        centres = np.round((edges[:-1] + edges[1:]) / 2, 12) + 0.0  # + 0.0 turns −0.0 into 0.0
        out = pd.DataFrame({"gap_ab": np.repeat(centres, grid), "gap_bc": np.tile(centres, grid),
                            "triples": raw.ravel().astype(np.int64)})
        index = pd.MultiIndex.from_tuples(triples, names=tri_cols)
        for name, series in (("pnt", per), ("sntd", sn)):
            val = series.reindex(index).to_numpy(np.float64) if len(series) else np.full(len(triples), np.nan)
            has = np.broadcast_to(~np.isnan(val), rows.shape)
            sums, counts = np.zeros((grid, grid)), np.zeros((grid, grid))
            np.add.at(sums, (rows[has], cols[has]), np.broadcast_to(val, rows.shape)[has])
            np.add.at(counts, (rows[has], cols[has]), 1.0)
            if sigma > 0:
                sums = ndimage.gaussian_filter(sums, sigma, mode="constant")
                counts = ndimage.gaussian_filter(counts, sigma, mode="constant")
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(
                    counts > 1e-12, sums / np.where(counts > 1e-12, counts, 1.0), np.nan
                ).ravel()
        for c, v in zip(by, key, strict=True):
            out[c] = v
        frames.append(out[[*by, "gap_ab", "gap_bc", "triples", "pnt", "sntd"]])
    columns = [*by, "gap_ab", "gap_bc", "triples", "pnt", "sntd"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
