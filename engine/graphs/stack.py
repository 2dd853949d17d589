"""Tournament graphs: verdicts → a GraphStack of T graphs over n models, one per graph key.

A graph is keyed by (dataset, judge, prompt_id, variant, turn). Edge ``i → j`` means *i beats j*;
a tie is the pair of reciprocal edges. Pairs never compared in a graph have no edge and are False
in ``observed``. Several valid verdicts on one pair in one graph are combined by a stated policy
(see ``COMBINE_POLICIES``); invalid verdicts (unparsable judge outputs) never enter a graph: they
are counted in ``keys.n_invalid`` of their graph, and a key whose verdicts are all invalid is no
graph at all (an empty graph would score zero bad cycles and be kept first by keep-K) but is
listed in ``GraphStack.invalid_only`` with its count, so no invalid verdict goes unreported.

A graph's ``category`` (and ``variant_kind``) is the most frequent non-missing value among the
verdicts of its key, valid and invalid; equal counts go to the first by name, and a key with no
value is missing. The verdicts of one prompt normally agree; this rule makes the rare
disagreement (files merged from two taxonomies) give the same label whatever the row order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.store.schema import GRAPH_KEY

CombinePolicy = Literal["plurality", "net", "unanimous"]
COMBINE_POLICIES: dict[str, str] = {
    "plurality": (
        "the most frequent outcome among wins of either side and ties; no unique most frequent "
        "outcome gives a tie (so two orders that agree give that winner, two that disagree a tie)"
    ),
    "net": "the side with more wins, ties ignored; equal win counts give a tie",
    "unanimous": "a winner only when every verdict on the pair names it; anything else is a tie",
}
DEFAULT_POLICY: CombinePolicy = "plurality"

KEY_COLUMNS = (*GRAPH_KEY, "category", "variant_kind")
GRAPH_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "model_a", "model_b", "winner", "prob_a")
"""Every verdict column ``graph_cells`` reads: a caller that builds graphs from the store reads only
these (``Store.verdicts(columns=...)``), not the rationales and raw outputs it would drop at once."""


def _empty_invalid_only() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in KEY_COLUMNS}).assign(
        n_invalid=pd.Series(dtype=np.int64))


@dataclass(frozen=True, eq=False)
class GraphStack:
    """T tournament graphs over one shared, sorted list of n models.

    ``adj[t, i, j]`` is True when, in graph t, there is an edge i → j (i beat j, or they tied);
    ``observed[t, i, j]`` is True (symmetrically) when the pair was compared in graph t;
    ``soft[t, i, j]`` is the mean judge probability that i beats j (NaN where no verdict on the pair
    has ``prob_a``; ``soft`` is None when no verdict of the stack has one);
    ``keys`` has one row per graph: the graph key, category, variant_kind and verdict counts;
    ``invalid_only`` lists the keys whose verdicts were all invalid (KEY_COLUMNS + n_invalid):
    they are not graphs of the stack, and ``subset`` / ``restrict_models`` carry the frame along.
    """

    models: tuple[str, ...]
    adj: np.ndarray
    observed: np.ndarray
    keys: pd.DataFrame
    policy: str = DEFAULT_POLICY
    soft: np.ndarray | None = field(default=None)
    invalid_only: pd.DataFrame = field(default_factory=_empty_invalid_only)

    @property
    def T(self) -> int:  # noqa: N802 - the papers' name for the number of graphs
        """Number of graphs in the stack."""
        return int(self.adj.shape[0])

    @property
    def n(self) -> int:
        """Number of models (the shared vertex set of every graph)."""
        return len(self.models)

    @property
    def wins(self) -> np.ndarray:
        """(T, n, n) bool: i beat j strictly."""
        return self.adj & ~self.adj.swapaxes(1, 2)

    @property
    def ties(self) -> np.ndarray:
        """(T, n, n) bool, symmetric: i and j tied (B = A ∘ Aᵀ)."""
        return self.adj & self.adj.swapaxes(1, 2)

    def subset(self, index: np.ndarray | list[int] | pd.Index) -> GraphStack:
        """The graphs at positional ``index`` (repeats allowed: bootstrap draws)."""
        idx = np.asarray(index, dtype=np.int64)
        return GraphStack(
            models=self.models,
            adj=self.adj[idx],
            observed=self.observed[idx],
            keys=self.keys.iloc[idx].reset_index(drop=True),
            policy=self.policy,
            soft=None if self.soft is None else self.soft[idx],
            invalid_only=self.invalid_only,
        )

    def restrict_models(self, models: list[str] | tuple[str, ...]) -> GraphStack:
        """The same graphs over a subset of models (order as in ``self.models``)."""
        keep = [i for i, m in enumerate(self.models) if m in set(models)]
        ix = np.ix_(range(self.T), keep, keep)
        return GraphStack(
            models=tuple(self.models[i] for i in keep),
            adj=self.adj[ix],
            observed=self.observed[ix],
            keys=self.keys,
            policy=self.policy,
            soft=None if self.soft is None else self.soft[ix],
            invalid_only=self.invalid_only,
        )

    def win_tie_matrices(self, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """W[i, j] = graphs where i beat j; Tm[i, j] = graphs where they tied (paper 000, eq. 3-4)."""
        wins, ties = self.wins, self.ties
        if index is not None:
            idx = np.asarray(index, dtype=np.int64)
            wins, ties = wins[idx], ties[idx]
        return wins.sum(axis=0, dtype=np.float64), ties.sum(axis=0, dtype=np.float64)

    def key_of(self, t: int) -> dict[str, object]:
        """The key columns (dataset, judge, prompt, variant, turn, ...) of graph ``t`` as a dict."""
        return {str(k): v for k, v in self.keys.iloc[int(t)].items()}


def check_policy(policy: str) -> None:
    """Refuse a combine policy that is not one of ``COMBINE_POLICIES``, in the one sentence every path
    uses (a path that answers without combining anything, such as the one-judge agreement table, asks
    here first, so the same request is refused alike whichever path answers it)."""
    if policy not in COMBINE_POLICIES:
        raise ValueError(f"Unknown combine policy {policy!r}; choose one of {', '.join(COMBINE_POLICIES)}.")


def combine_counts(lo_win: np.ndarray, hi_win: np.ndarray, tie: np.ndarray, policy: str) -> np.ndarray:
    """Outcome per pair from verdict counts: +1 lo wins, -1 hi wins, 0 tie."""
    check_policy(policy)
    if policy == "plurality":
        top = np.maximum(np.maximum(lo_win, hi_win), tie)
        lo_only = (lo_win == top) & (hi_win < top) & (tie < top)
        hi_only = (hi_win == top) & (lo_win < top) & (tie < top)
        return lo_only.astype(np.int8) - hi_only.astype(np.int8)
    if policy == "net":
        return np.sign(lo_win - hi_win).astype(np.int8)
    total = lo_win + hi_win + tie  # unanimous
    return (lo_win == total).astype(np.int8) - (hi_win == total).astype(np.int8)


def _majority(gid: np.ndarray, groups: int, values: pd.Series) -> np.ndarray:
    """Per group id 0..groups-1: the most frequent non-missing value, equal counts going to the
    first by name; None where a group has no value (object array)."""
    codes, uniques = pd.factorize(values, sort=True)  # codes follow name order; missing → -1
    out = np.full(groups, None, dtype=object)
    has = codes >= 0
    if not has.any():
        return out
    width = len(uniques)
    u, count = np.unique(gid[has].astype(np.int64) * width + codes[has], return_counts=True)
    g, label = u // width, u % width
    order = np.lexsort((label, -count, g))  # per group: highest count, then first name
    g, label = g[order], label[order]
    first = np.r_[True, g[1:] != g[:-1]]
    out[g[first]] = np.asarray(uniques, dtype=object)[label[first]]
    return out


def _group_ids(frame: pd.DataFrame, by: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(group id per row in key order, index of each group's first row)."""
    gid = frame.groupby(by, sort=True, dropna=False).ngroup().to_numpy(np.int64)
    order = np.argsort(gid, kind="stable")
    groups = int(gid.max()) + 1 if len(gid) else 0
    return gid, order[np.searchsorted(gid[order], np.arange(groups))]


def majority_label(verdicts: pd.DataFrame, column: str, by: list[str]) -> pd.DataFrame:
    """Per group of ``by``: the most frequent non-missing value of ``column``, equal counts going
    to the first by name (groups with no value are absent). Independent of the row order."""
    gid, first = _group_ids(verdicts, by)
    out = verdicts[by].iloc[first].reset_index(drop=True)
    out[column] = pd.Series(_majority(gid, len(first), verdicts[column]), dtype=object)
    return out[out[column].notna()].reset_index(drop=True)


def _empty_stack(models: tuple[str, ...], policy: str, invalid_only: pd.DataFrame) -> GraphStack:
    n = len(models)
    z = np.zeros((0, n, n), dtype=bool)
    keys = pd.DataFrame(columns=[*KEY_COLUMNS, "n_verdicts", "n_invalid"])
    return GraphStack(models, z, z.copy(), keys, policy, np.zeros((0, n, n)), invalid_only)


@dataclass(frozen=True)
class GraphCells:
    """The combined outcome of every compared pair of every graph, before any layout: ``keys`` and
    ``invalid_only`` as in GraphStack; per cell (one per graph and unordered pair) the graph ``t``,
    the model indices ``lo < hi`` into ``models``, ``outcome`` (+1 lo wins, −1 hi wins, 0 tie) and
    ``p_lo`` (mean judge probability that lo wins; None when no verdict carries ``prob_a``)."""

    models: tuple[str, ...]
    keys: pd.DataFrame
    invalid_only: pd.DataFrame
    policy: str
    t: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    outcome: np.ndarray
    p_lo: np.ndarray | None

    @property
    def T(self) -> int:  # noqa: N802 - the papers' name for the number of graphs
        """Number of graphs the cells describe."""
        return len(self.keys)


def graph_cells(
    verdicts: pd.DataFrame,
    *,
    policy: str = DEFAULT_POLICY,
    models: list[str] | tuple[str, ...] | None = None,
) -> GraphCells:
    """Combine a canonical verdict frame into one outcome per graph and pair (see ``build_stack``).

    Memory grows with the number of compared pairs, not with T·n²: both the dense GraphStack and the
    bucketed layout of engine.graphs.buckets are built from these cells.
    """
    check_policy(policy)
    winner = verdicts["winner"].to_numpy(dtype=object)
    if models is None:
        ok = winner != "invalid"
        names = pd.unique(np.concatenate([verdicts["model_a"].to_numpy(dtype=object)[ok],
                                          verdicts["model_b"].to_numpy(dtype=object)[ok]]))
        models = tuple(sorted(names))
    else:
        models = tuple(models)
        keep = (verdicts["model_a"].isin(models) & verdicts["model_b"].isin(models)).to_numpy()
        verdicts, winner = verdicts[keep], winner[keep]
    none = np.zeros(0, dtype=np.int64)
    if verdicts.empty:
        keys = pd.DataFrame(columns=[*KEY_COLUMNS, "n_verdicts", "n_invalid"])
        return GraphCells(
            models, keys, _empty_invalid_only(), policy, none, none, none, none.astype(np.int8), None
        )
    key_cols = list(GRAPH_KEY)
    invalid = winner == "invalid"

    # every key of the verdicts, in key order, with its counts and labels
    gid, first = _group_ids(verdicts, key_cols)
    G = len(first)
    all_keys = verdicts[key_cols].iloc[first].reset_index(drop=True)
    for col in ("category", "variant_kind"):
        all_keys[col] = pd.Series(_majority(gid, G, verdicts[col]), dtype=object)
    all_keys["n_verdicts"] = np.bincount(gid[~invalid], minlength=G).astype(np.int64)
    all_keys["n_invalid"] = np.bincount(gid[invalid], minlength=G).astype(np.int64)
    is_graph = all_keys["n_verdicts"].to_numpy() > 0
    invalid_only = all_keys.loc[~is_graph, [*KEY_COLUMNS, "n_invalid"]].reset_index(drop=True)
    keys = all_keys.loc[is_graph, [*KEY_COLUMNS, "n_verdicts", "n_invalid"]].reset_index(drop=True)
    if len(keys) == 0:
        keys = pd.DataFrame(columns=[*KEY_COLUMNS, "n_verdicts", "n_invalid"])
        return GraphCells(models, keys, invalid_only, policy, none, none, none, none.astype(np.int8), None)
    n = len(models)

    # valid verdicts → (graph, lo, hi) with the outcome seen from lo (the lower model index)
    v = ~invalid
    t = (np.cumsum(is_graph) - 1)[gid[v]]
    index = pd.Index(models)
    ia = index.get_indexer(verdicts["model_a"].to_numpy(dtype=object)[v])
    ib = index.get_indexer(verdicts["model_b"].to_numpy(dtype=object)[v])
    w = winner[v]
    a_first = ia < ib
    lo, hi = np.where(a_first, ia, ib), np.where(a_first, ib, ia)
    a_wins, b_wins = w == "A", w == "B"

    cell, inv = np.unique((t.astype(np.int64) * n + lo) * n + hi, return_inverse=True)
    inv = inv.ravel()
    m = len(cell)
    lo_win = np.bincount(inv, weights=np.where(a_first, a_wins, b_wins), minlength=m)
    hi_win = np.bincount(inv, weights=np.where(a_first, b_wins, a_wins), minlength=m)
    ties = np.bincount(inv, weights=w == "tie", minlength=m)
    outcome = combine_counts(lo_win, hi_win, ties, policy)
    p_mean = None
    if "prob_a" in verdicts.columns:
        prob = verdicts["prob_a"].to_numpy(dtype=np.float64)[v]
        has_p = ~np.isnan(prob)
        if has_p.any():  # no float array at all when no verdict carries a probability
            p_lo = np.where(a_first, prob, 1.0 - prob)
            p_sum = np.bincount(inv, weights=np.where(has_p, p_lo, 0.0), minlength=m)
            p_n = np.bincount(inv, weights=has_p, minlength=m)
            p_mean = np.full(m, np.nan)
            np.divide(p_sum, p_n, out=p_mean, where=p_n > 0)
    return GraphCells(
        models, keys, invalid_only, policy, cell // (n * n), (cell // n) % n, cell % n, outcome, p_mean
    )


def build_stack(
    verdicts: pd.DataFrame,
    *,
    policy: str = DEFAULT_POLICY,
    models: list[str] | tuple[str, ...] | None = None,
) -> GraphStack:
    """Turn a canonical verdict frame into a GraphStack (invalid verdicts are left out).

    ``models`` fixes the vertex set and order (default: every model in the valid verdicts, sorted);
    verdicts involving other models are ignored, invalid ones included.
    Graphs are ordered by their key, so the result does not depend on the row order of the input.
    Keys whose verdicts are all invalid go to ``invalid_only`` (see the module docstring).
    ``soft`` is None when no verdict carries a judge probability (``prob_a``).
    The stack is dense, (T, n, n) per array: per-graph analysis on many graphs over many models
    uses engine.graphs.buckets instead, whose cost is each graph's own size.
    """
    return stack_from_cells(graph_cells(verdicts, policy=policy, models=models))


DENSE_CELL_LIMIT = 100_000_000
"""The most graph x model x model cells one dense GraphStack may hold (two bool arrays, a float array
for soft verdicts and the float work of a ranker that reads whole graphs: about 1-2 GB at the limit).
Larger selections are refused in one sentence before any (T, n, n) array exists; per-graph work on
many graphs over many models goes through engine.graphs.buckets, whose cost is each graph's own
size."""


def check_dense_size(T: int, n: int, what: str = "This selection") -> None:
    """Refuse, in one sentence and before allocating, a dense stack of more than ``DENSE_CELL_LIMIT``
    cells; ``what`` names who needs it (e.g. "The pged ranker")."""
    cells = int(T) * int(n) * int(n)
    if cells > DENSE_CELL_LIMIT:
        raise LensError(
            f"{what} reads whole graphs, and the {int(T):,} graphs over {int(n):,} models here would need "
            f"{cells:,} graph x model x model cells (more than {DENSE_CELL_LIMIT:,}); choose a ranker "
            "fitted from counts (bt, davidson, elo, winrate, ...), a judge or category, or keep fewer graphs."
        )


def stack_from_cells(cells: GraphCells, what: str = "This selection") -> GraphStack:
    """The dense GraphStack of combined cells; refused by ``check_dense_size`` beyond its limit."""
    models, T, n = cells.models, cells.T, len(cells.models)
    check_dense_size(T, n, what)
    if T == 0:
        return _empty_stack(models, cells.policy, cells.invalid_only)
    t_idx, i_idx, j_idx, outcome = cells.t, cells.lo, cells.hi, cells.outcome
    adj = np.zeros((T, n, n), dtype=bool)
    observed = np.zeros((T, n, n), dtype=bool)
    observed[t_idx, i_idx, j_idx] = True
    observed[t_idx, j_idx, i_idx] = True
    adj[t_idx, i_idx, j_idx] = outcome >= 0  # lo beats hi, or tie
    adj[t_idx, j_idx, i_idx] = outcome <= 0  # hi beats lo, or tie
    soft = None
    if cells.p_lo is not None:
        soft = np.full((T, n, n), np.nan)
        soft[t_idx, i_idx, j_idx] = cells.p_lo
        soft[t_idx, j_idx, i_idx] = 1.0 - cells.p_lo
    return GraphStack(models, adj, observed, cells.keys, cells.policy, soft, cells.invalid_only)
