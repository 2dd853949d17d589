"""Tournament graphs: verdicts → a GraphStack of T graphs over n models, one per graph key.

A graph is keyed by (dataset, judge, prompt_id, variant, turn). Edge ``i → j`` means *i beats j*;
a tie is the pair of reciprocal edges. Pairs never compared in a graph have no edge and are False
in ``observed``. Several valid verdicts on one pair in one graph are combined by a stated policy
(see ``COMBINE_POLICIES``); invalid verdicts (unparsable judge outputs) never enter a graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from .schema import GRAPH_KEY

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


@dataclass(frozen=True, eq=False)
class GraphStack:
    """T tournament graphs over one shared, sorted list of n models.

    ``adj[t, i, j]`` is True when, in graph t, there is an edge i → j (i beat j, or they tied);
    ``observed[t, i, j]`` is True (symmetrically) when the pair was compared in graph t;
    ``soft[t, i, j]`` is the mean judge probability that i beats j (NaN without ``prob_a``);
    ``keys`` has one row per graph: the graph key, category, variant_kind and verdict counts.
    """

    models: tuple[str, ...]
    adj: np.ndarray
    observed: np.ndarray
    keys: pd.DataFrame
    policy: str = DEFAULT_POLICY
    soft: np.ndarray | None = field(default=None)

    @property
    def T(self) -> int:  # noqa: N802 - the papers' name for the number of graphs
        return int(self.adj.shape[0])

    @property
    def n(self) -> int:
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
        )

    def win_tie_matrices(self, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """W[i, j] = graphs where i beat j; Tm[i, j] = graphs where they tied (paper 000, eq. 3-4)."""
        wins, ties = self.wins, self.ties
        if index is not None:
            idx = np.asarray(index, dtype=np.int64)
            wins, ties = wins[idx], ties[idx]
        return wins.sum(axis=0, dtype=np.float64), ties.sum(axis=0, dtype=np.float64)

    def key_of(self, t: int) -> dict[str, object]:
        return self.keys.iloc[int(t)].to_dict()


def _pair_outcomes(valid: pd.DataFrame) -> pd.DataFrame:
    """Per verdict: the unordered pair (lo < hi by name) and the outcome from lo's side."""
    a, b = valid["model_a"].to_numpy(dtype=object), valid["model_b"].to_numpy(dtype=object)
    swap = a > b
    lo = np.where(swap, b, a)
    hi = np.where(swap, a, b)
    w = valid["winner"].to_numpy(dtype=object)
    a_wins = w == "A"
    b_wins = w == "B"
    lo_wins = np.where(swap, b_wins, a_wins)
    hi_wins = np.where(swap, a_wins, b_wins)
    out = valid[list(KEY_COLUMNS)].copy()
    out["lo"], out["hi"] = lo, hi
    out["lo_win"] = lo_wins.astype(np.int64)
    out["hi_win"] = hi_wins.astype(np.int64)
    out["tie"] = (w == "tie").astype(np.int64)
    p = valid["prob_a"].to_numpy(dtype=np.float64)
    out["p_lo"] = np.where(swap, 1.0 - p, p)
    return out


def combine_counts(lo_win: np.ndarray, hi_win: np.ndarray, tie: np.ndarray, policy: str) -> np.ndarray:
    """Outcome per pair from verdict counts: +1 lo wins, -1 hi wins, 0 tie."""
    if policy == "plurality":
        top = np.maximum(np.maximum(lo_win, hi_win), tie)
        lo_only = (lo_win == top) & (hi_win < top) & (tie < top)
        hi_only = (hi_win == top) & (lo_win < top) & (tie < top)
        return lo_only.astype(np.int8) - hi_only.astype(np.int8)
    if policy == "net":
        return np.sign(lo_win - hi_win).astype(np.int8)
    if policy == "unanimous":
        total = lo_win + hi_win + tie
        return (lo_win == total).astype(np.int8) - (hi_win == total).astype(np.int8)
    raise ValueError(f"Unknown combine policy {policy!r}; choose one of {', '.join(COMBINE_POLICIES)}.")


def build_stack(
    verdicts: pd.DataFrame,
    *,
    policy: str = DEFAULT_POLICY,
    models: list[str] | tuple[str, ...] | None = None,
) -> GraphStack:
    """Turn a canonical verdict frame into a GraphStack (invalid verdicts are left out).

    ``models`` fixes the vertex set and order (default: every model in the valid verdicts, sorted).
    Graphs are ordered by their key, so the result does not depend on the row order of the input.
    """
    if policy not in COMBINE_POLICIES:
        raise ValueError(f"Unknown combine policy {policy!r}; choose one of {', '.join(COMBINE_POLICIES)}.")
    valid = verdicts[verdicts["winner"] != "invalid"]
    if models is None:
        models = tuple(sorted(set(valid["model_a"]).union(valid["model_b"])))
    else:
        models = tuple(models)
        valid = valid[valid["model_a"].isin(models) & valid["model_b"].isin(models)]
    n = len(models)
    empty_keys = pd.DataFrame(columns=[*KEY_COLUMNS, "n_verdicts", "n_invalid"])
    if valid.empty:
        z = np.zeros((0, n, n), dtype=bool)
        return GraphStack(models, z, z.copy(), empty_keys, policy, np.zeros((0, n, n)))

    po = _pair_outcomes(valid)
    key_cols = list(GRAPH_KEY)
    grouped = po.groupby([*key_cols, "lo", "hi"], sort=True, dropna=False).agg(
        lo_win=("lo_win", "sum"), hi_win=("hi_win", "sum"), tie=("tie", "sum"),
        p_lo=("p_lo", "mean"), n=("tie", "size"),
    ).reset_index()

    keys = (
        po.groupby(key_cols, sort=True, dropna=False)
        .agg(category=("category", "first"), variant_kind=("variant_kind", "first"), n_verdicts=("tie", "size"))
        .reset_index()
    )
    invalid = verdicts[verdicts["winner"] == "invalid"]
    if len(invalid):
        inv_counts = invalid.groupby(key_cols, dropna=False).size().rename("n_invalid").reset_index()
        keys = keys.merge(inv_counts, on=key_cols, how="left")
    else:
        keys["n_invalid"] = 0
    keys["n_invalid"] = keys["n_invalid"].fillna(0).astype(np.int64)
    keys = keys[[*KEY_COLUMNS, "n_verdicts", "n_invalid"]]

    graph_index = pd.MultiIndex.from_frame(keys[key_cols])
    t_idx = graph_index.get_indexer(pd.MultiIndex.from_frame(grouped[key_cols]))
    pos = {m: i for i, m in enumerate(models)}
    i_idx = grouped["lo"].map(pos).to_numpy(np.int64)
    j_idx = grouped["hi"].map(pos).to_numpy(np.int64)
    outcome = combine_counts(
        grouped["lo_win"].to_numpy(), grouped["hi_win"].to_numpy(), grouped["tie"].to_numpy(), policy
    )

    T = len(keys)
    adj = np.zeros((T, n, n), dtype=bool)
    observed = np.zeros((T, n, n), dtype=bool)
    observed[t_idx, i_idx, j_idx] = True
    observed[t_idx, j_idx, i_idx] = True
    adj[t_idx, i_idx, j_idx] = outcome >= 0  # lo beats hi, or tie
    adj[t_idx, j_idx, i_idx] = outcome <= 0  # hi beats lo, or tie
    soft = np.full((T, n, n), np.nan)
    p_lo = grouped["p_lo"].to_numpy(np.float64)
    soft[t_idx, i_idx, j_idx] = p_lo
    soft[t_idx, j_idx, i_idx] = 1.0 - p_lo
    return GraphStack(models, adj, observed, keys, policy, soft)
