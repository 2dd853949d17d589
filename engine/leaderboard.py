"""The leaderboard service: store → graphs → (keep-K by S_mu) → ranker → table with bootstrap CIs.

One call describes exactly what produced a table (``params``): dataset and its version, judge and
category filters, combine policy, truncation (K, mu, per category, threshold), ranker and its
parameters, bootstrap B and seed. Truncation uses ``engine.cycles`` and ``engine.truncation``
(paper 000, Section 3.1); W and T follow eq. 3-4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .bootstrap import BootstrapResult
from .bootstrap import bootstrap as run_bootstrap
from .distances import all_distances
from .errors import LensError
from .graphs import DEFAULT_POLICY, GraphStack, build_stack
from .rankers import RankResult, rank
from .rankers.base import ranks_from_scores

TABLE_COLUMNS = (
    "rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "wins", "losses", "ties",
    "win_rate", "n_graphs_model",
)


@dataclass(frozen=True)
class Leaderboard:
    """``table`` (one row per model, best first), ``params`` (what produced it), the kept graphs."""

    table: pd.DataFrame
    params: dict[str, Any]
    n_graphs: int
    kept: pd.DataFrame
    result: RankResult = field(repr=False)
    bootstrap: BootstrapResult | None = field(default=None, repr=False)

    @property
    def ranks(self) -> pd.Series:
        return self.table.set_index("model")["rank"]

    @property
    def scores(self) -> pd.Series:
        return self.table.set_index("model")["score"]


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def truncate(stack: GraphStack, keep_k: int, mu: float = 1.0, per_category: bool = False):
    """Keep the K graphs with the smallest S_mu = C3_bad + mu C4_bad (paper 000, Section 3.1)."""
    from .cycles import cycle_counts
    from .truncation import select_keep_k, truncation_scores

    scores = truncation_scores(cycle_counts(stack), mu=mu)
    sel = select_keep_k(scores, stack.keys, keep_k, per_category=per_category)
    return stack.subset(sel.index), sel


def leaderboard_from_stack(
    stack: GraphStack,
    *,
    ranker: str = "bt",
    keep_k: int | None = None,
    mu: float = 1.0,
    per_category: bool = False,
    bootstrap: int = 0,
    seed: int = 0,
    ranker_params: dict | None = None,
    level: float = 0.95,
    extra_params: dict | None = None,
) -> Leaderboard:
    """Rank a stack (optionally truncated to keep-K) and tabulate scores, CIs and win/loss/tie counts."""
    params = dict(ranker_params or {})
    pool = stack.T
    threshold = None
    if stack.T == 0:
        raise LensError("The selection holds no graph: no valid verdict matches the filters.")
    if keep_k is not None:
        stack, sel = truncate(stack, keep_k, mu, per_category)
        threshold = sel.threshold if not isinstance(sel.threshold, pd.Series) else sel.threshold.to_dict()
    res = rank(stack, ranker, **params)
    models = list(stack.models)
    W, T = stack.win_tie_matrices()
    wins, losses, ties = W.sum(axis=1), W.sum(axis=0), T.sum(axis=1)
    games = wins + losses + ties
    scores = res.scores.reindex(models)
    table = pd.DataFrame(
        {
            "model": models,
            "score": scores.to_numpy(np.float64),
            "wins": wins.astype(np.int64),
            "losses": losses.astype(np.int64),
            "ties": ties.astype(np.int64),
            "win_rate": np.divide(wins + 0.5 * ties, games, out=np.full(len(models), np.nan), where=games > 0),
            "n_graphs_model": stack.observed.any(axis=2).sum(axis=0).astype(np.int64),
        }
    )
    table["rank"] = ranks_from_scores(scores).to_numpy()
    boot = None
    if bootstrap and int(bootstrap) > 0:
        boot = run_bootstrap(stack, ranker, int(bootstrap), int(seed), level=level, **params)
        sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
        table["ci_low"], table["ci_high"] = sci["low"].to_numpy(), sci["high"].to_numpy()
        table["rank_low"], table["rank_high"] = rci["low"].to_numpy(), rci["high"].to_numpy()
    else:
        table["ci_low"] = table["ci_high"] = np.nan
        table["rank_low"] = table["rank_high"] = pd.array([pd.NA] * len(models), dtype="Int64")
    if "order" in res.extras:  # rankers with a stated total order (PGED's lexicographic tie-break)
        pos = {m: i for i, m in enumerate(res.extras["order"])}
        table["_o"] = table["model"].map(pos)
        table = table.sort_values(["_o"]).drop(columns="_o")
    else:
        table = table.sort_values(["rank", "model"], kind="stable")
    table = table[list(TABLE_COLUMNS)].reset_index(drop=True)
    info = {
        "ranker": ranker,
        "ranker_params": _plain(params),
        "ranker_details": _plain({k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}),
        "policy": stack.policy,
        "keep_k": keep_k,
        "mu": mu if keep_k is not None else None,
        "per_category": per_category if keep_k is not None else None,
        "threshold": _plain(threshold),
        "n_graphs_pool": pool,
        "n_graphs": stack.T,
        "n_models": stack.n,
        "bootstrap": int(bootstrap or 0),
        "seed": int(seed) if bootstrap else None,
        "bootstrap_method": boot.method if boot is not None else None,
        "level": level if bootstrap else None,
        **(extra_params or {}),
    }
    return Leaderboard(table, info, stack.T, stack.keys.copy(), res, boot)


def leaderboard(
    store,
    dataset: str,
    *,
    judge: str | list[str] | None = None,
    category: str | list[str] | None = None,
    ranker: str = "bt",
    keep_k: int | None = None,
    mu: float = 1.0,
    per_category: bool = False,
    bootstrap: int = 0,
    seed: int = 0,
    policy: str = DEFAULT_POLICY,
    ranker_params: dict | None = None,
    level: float = 0.95,
) -> Leaderboard:
    """The leaderboard of a stored dataset under the given filters, truncation and ranker."""
    verdicts = store.verdicts(dataset, judge=judge, category=category)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    stack = build_stack(verdicts, policy=policy)
    extra = {
        "dataset": dataset,
        "dataset_version": store.dataset_version(dataset),
        "judge": judge,
        "judges": sorted(verdicts["judge"].dropna().unique().tolist()),
        "category": category,
        "n_invalid_verdicts": int((verdicts["winner"] == "invalid").sum()),
    }
    return leaderboard_from_stack(
        stack, ranker=ranker, keep_k=keep_k, mu=mu, per_category=per_category, bootstrap=bootstrap, seed=seed,
        ranker_params=ranker_params, level=level, extra_params=extra,
    )


def compare_to_reference(board: Leaderboard, reference: pd.Series) -> dict[str, Any]:
    """The four ranking distances between a leaderboard and reference ratings, on shared models."""
    ref_ranks = ranks_from_scores(reference.astype(np.float64))
    out: dict[str, Any] = all_distances(board.ranks, ref_ranks)
    shared = [m for m in board.table["model"] if m in set(reference.index)]
    out["models"] = " ".join(shared)
    return out
