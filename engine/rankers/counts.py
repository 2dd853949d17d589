"""Pair outcomes straight from a verdict table, without a dense (T, n, n) stack.

For very many graphs (a million one-comparison prompts) a GraphStack is too large; this aggregates the
verdict table into one combined outcome per (graph, pair) with the same combine policies as
``engine.graphs.stack`` and hands out W~ = W + T/2 or the pattern counts a bootstrap needs. Model and
prompt columns given as pandas Categoricals are used through their codes (fast); plain strings are
factorised first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.stack import DEFAULT_POLICY, combine_counts
from engine.rankers.base import RankResult
from engine.rankers.bt import fit_bt_pairs
from engine.rankers.votes import PairCounts
from engine.store.schema import GRAPH_KEY


@dataclass(frozen=True)
class VerdictCounts:
    """One combined outcome per compared (graph, pair): ``outcome`` +1 lo won, -1 hi won, 0 tie."""

    models: tuple[str, ...]
    graph: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    outcome: np.ndarray
    n_graphs: int

    @property
    def n(self) -> int:
        """Number of models."""
        return len(self.models)

    def wtilde(self) -> np.ndarray:
        """(n, n) half-tie win matrix W + T/2 (paper 000, eq. 3-4 and Section 3.2)."""
        n = self.n
        lo_pts = np.where(self.outcome > 0, 1.0, np.where(self.outcome == 0, 0.5, 0.0))
        w = np.bincount(self.lo * n + self.hi, weights=lo_pts, minlength=n * n)
        w += np.bincount(self.hi * n + self.lo, weights=1.0 - lo_pts, minlength=n * n)
        return w.reshape(n, n)

    def wtilde_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """W + T/2 per compared pair (lo, hi, W~[lo, hi], W~[hi, lo]), never an (n, n) array."""
        none = np.zeros(self.n, dtype=np.int64)
        return PairCounts.of_votes(self.models, self.lo, self.hi, self.outcome, votes=none, n_graphs=none,
                                   n_prompts=none).wtilde_pairs()

    def single_pair_graphs(self) -> bool:
        """True when every graph holds exactly one compared pair (each outcome its own prompt)."""
        return bool(np.bincount(self.graph, minlength=self.n_graphs).max(initial=0) <= 1)


def _codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Integer model codes for both columns over one sorted model list (categoricals use their codes)."""
    if isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype):
        ca, ua = a.cat.codes.to_numpy(), a.cat.categories
        cb, ub = b.cat.codes.to_numpy(), b.cat.categories
    else:  # factorise each column on its own (fast for Arrow-backed strings), then unify the few uniques
        ca, ua = pd.factorize(a)
        cb, ub = pd.factorize(b)
    ua, ub = pd.Index(np.asarray(ua, dtype=object)), pd.Index(np.asarray(ub, dtype=object))
    cats = ua.union(ub).sort_values()
    ca = cats.get_indexer(ua)[ca]
    cb = cats.get_indexer(ub)[cb]
    return ca.astype(np.int64), cb.astype(np.int64), tuple(str(c) for c in cats)


def _graph_ids(v: pd.DataFrame) -> tuple[np.ndarray, bool]:
    """Graph index per row, and whether every row is its own graph (unique prompt ids)."""
    cols = [c for c in GRAPH_KEY if c in v.columns]
    if "prompt_id" not in cols:
        raise LensError("The verdict table has no prompt_id column, so its graphs cannot be told apart.")
    pid = v["prompt_id"]
    codes = pid.cat.codes.to_numpy() if isinstance(pid.dtype, pd.CategoricalDtype) else pd.factorize(pid)[0]
    codes = codes.astype(np.int64)
    if np.bincount(codes).max(initial=0) <= 1:
        return codes, True
    if len(cols) == 1:
        return codes, False
    return v.groupby(cols, sort=True, dropna=False, observed=True).ngroup().to_numpy(np.int64), False


def _winner_flags(w: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean A / B / tie masks (categoricals compared once per category, object strings factorised)."""
    if isinstance(w.dtype, pd.CategoricalDtype):
        cats = np.asarray(w.cat.categories.astype(str))
        codes = w.cat.codes.to_numpy()
        a, b, t = ((cats == k)[codes] & (codes >= 0) for k in ("A", "B", "tie"))
        return a, b, t
    if isinstance(w.dtype, pd.StringDtype):  # vectorised in Arrow, no Python objects
        a, b, t = (w.eq(k).to_numpy(dtype=bool, na_value=False) for k in ("A", "B", "tie"))
        return a, b, t
    # object strings: hash once (three distinct values) instead of three elementwise comparisons,
    # which cost ~5x more on a million rows
    codes, uniq = pd.factorize(w)
    labels = np.asarray(uniq, dtype=object)
    a, b, t = ((labels == k)[codes] & (codes >= 0) for k in ("A", "B", "tie"))
    return a, b, t


def verdict_counts(verdicts: pd.DataFrame, policy: str = DEFAULT_POLICY) -> VerdictCounts:
    """Combine a verdict table into one outcome per (graph, pair); invalid verdicts are left out."""
    a_win, b_win, tie = _winner_flags(verdicts["winner"])
    valid = a_win | b_win | tie
    v = verdicts
    if not valid.all():
        v = verdicts[valid]
        a_win, b_win, tie = a_win[valid], b_win[valid], tie[valid]
    a, b, models = _codes(v["model_a"], v["model_b"])
    if (a == b).any():
        row = int(np.flatnonzero(a == b)[0])
        raise LensError(f"Verdict row {row} compares a model with itself ({models[a[row]]}).")
    g, own_graph = _graph_ids(v)
    swap = a > b
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    lo_win = np.where(swap, b_win, a_win).astype(np.int64)
    hi_win = np.where(swap, a_win, b_win).astype(np.int64)
    n = len(models)
    n_graphs = int(g.max()) + 1 if g.size else 0
    pair_key = (g * n + lo) * n + hi
    if own_graph or not (np.diff(np.sort(pair_key)) == 0).any():  # one verdict per (graph, pair)
        out = lo_win - hi_win
        return VerdictCounts(models, g, lo, hi, out.astype(np.int8), n_graphs)
    frame = pd.DataFrame({"k": pair_key, "lw": lo_win, "hw": hi_win, "t": tie.astype(np.int64)})
    agg = frame.groupby("k", sort=True).sum()
    k = agg.index.to_numpy(np.int64)
    out = combine_counts(agg["lw"].to_numpy(), agg["hw"].to_numpy(), agg["t"].to_numpy(), policy)
    return VerdictCounts(models, k // (n * n), (k // n) % n, k % n, out, n_graphs)


def fit_bt_verdicts(verdicts: pd.DataFrame, *, policy: str = DEFAULT_POLICY, **params) -> RankResult:
    """Half-tie BT straight from a verdict table (aggregation included); params as ``fit_bt``."""
    vc = verdict_counts(verdicts, policy)
    return fit_bt_pairs(vc.n, vc.wtilde_pairs(), vc.models, **params)
