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
from .graphs import DEFAULT_POLICY, GraphStack, graph_cells, stack_from_cells
from .rankers import RankResult, rank
from .rankers.base import ranks_from_scores

COUNTING_RANKERS = ("copeland", "scorewin", "majority", "borda", "pairwise-majority")

TABLE_COLUMNS = (
    "rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "wins", "losses", "ties",
    "win_rate", "n_graphs_model",
)


@dataclass(frozen=True)
class Leaderboard:
    """``table`` (one row per model, best first), ``params`` (what produced it), the graphs ranked
    (``kept``: with keep-K, the kept-graph table in keep order with each graph's S_mu)."""

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


def truncate(stack: GraphStack, keep_k: int, mu: float = 1.0, per_category: bool = False, pool: str = "perturbed"):
    """Keep the K graphs with the smallest S_mu = C3_bad + mu C4_bad (paper 000, Section 3.1).

    Scores come from the graphs as judged; ``pool`` says which variants compete (``perturbed``:
    originals and paraphrases, as the paper's Trunc; ``sampling``; ``all``). Returns the kept
    sub-stack and ``engine.truncation.KeptGraphs`` (kept-graph table, threshold S_K, notes).
    """
    from .truncation import keep_k_graphs

    kept = keep_k_graphs(stack, keep_k, mu=mu, per_category=per_category, pool=pool)
    return stack.subset(kept.index), kept


def leaderboard_from_stack(
    stack: GraphStack,
    *,
    ranker: str = "bt",
    keep_k: int | None = None,
    mu: float = 1.0,
    per_category: bool = False,
    pool: str = "perturbed",
    bootstrap: int = 0,
    seed: int = 0,
    ranker_params: dict | None = None,
    level: float = 0.95,
    extra_params: dict | None = None,
    bootstrap_unit: str | None = None,
) -> Leaderboard:
    """Rank a stack (optionally truncated to keep-K) and tabulate scores, CIs and win/loss/tie counts.

    Only models compared in the ranked graphs are ranked: after keep-K (or a filter) a model without
    any comparison would otherwise get a score from regularisation alone (BT's virtual ties put four
    unseen guanacos 3rd with every judge pooled and K = 10). Dropped models are listed in
    ``params["dropped_models"]`` and in a note. ``bootstrap_unit``: graph or prompt (None: the
    ranker's own unit, ``engine.bootstrap.default_unit``).
    """
    params = dict(ranker_params or {})
    n_pool = stack.T
    threshold, keep_note, kept_table = None, None, None
    if int(bootstrap or 0) < 0:
        raise LensError(f"The number of bootstrap resamples must be 0 (no intervals) or more; got {bootstrap}.")
    if stack.T == 0:
        raise LensError("The selection holds no graph: no valid verdict matches the filters.")
    if keep_k is not None:
        stack, sel = truncate(stack, keep_k, mu, per_category, pool)
        threshold = sel.threshold if not isinstance(sel.threshold, pd.Series) else sel.threshold.to_dict()
        n_pool, keep_note, kept_table = sel.n_pool, sel.note or None, sel.table
    stack, dropped = compared_models_only(stack, keep_k is not None)
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
    # ranks: a ranker's stated total order when it has one (PGED's name tie-break, Kemeny's order),
    # else competition ranks of the scores with the float tolerance of ranks_from_scores
    table["rank"] = res.ranks.reindex(models).to_numpy()
    boot = None
    if bootstrap and int(bootstrap) > 0:
        boot = run_bootstrap(stack, ranker, int(bootstrap), int(seed), level=level, unit=bootstrap_unit, **params)
        sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
        table["ci_low"], table["ci_high"] = sci["low"].to_numpy(), sci["high"].to_numpy()
        table["rank_low"], table["rank_high"] = rci["low"].to_numpy(), rci["high"].to_numpy()
    else:
        table["ci_low"] = table["ci_high"] = np.nan
        table["rank_low"] = table["rank_high"] = pd.array([pd.NA] * len(models), dtype="Int64")
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
        "pool": pool if keep_k is not None else None,
        "threshold": _plain(threshold),
        "keep_note": keep_note,
        "n_graphs_pool": n_pool,
        "n_graphs": stack.T,
        "n_models": stack.n,
        "dropped_models": dropped,
        "bootstrap": int(bootstrap or 0),
        "seed": int(seed) if bootstrap else None,
        "bootstrap_unit": boot.unit if boot is not None else None,
        "bootstrap_method": boot.method if boot is not None else None,
        "bootstrap_n_regularised": boot.n_regularised if boot is not None else None,
        "bootstrap_n_unconverged": boot.n_unconverged if boot is not None else None,
        "bootstrap_n_undefined": boot.n_undefined if boot is not None else None,
        "n_uncompared_pairs": int(((~stack.observed.any(axis=0)) & ~np.eye(stack.n, dtype=bool)).sum() // 2),
        "level": level if bootstrap else None,
        **(extra_params or {}),
    }
    kept = kept_table if kept_table is not None else stack.keys.copy()
    return Leaderboard(table, info, stack.T, kept, res, boot)


def compared_models_only(stack: GraphStack, after_keep_k: bool = False) -> tuple[GraphStack, list[str]]:
    """The stack over the models compared in at least one of its graphs, and the models dropped."""
    seen = stack.observed.any(axis=(0, 2))
    dropped = [m for m, s in zip(stack.models, seen, strict=True) if not s]
    if not dropped:
        return stack, []
    kept = [m for m, s in zip(stack.models, seen, strict=True) if s]
    if len(kept) < 2:
        where = "the graphs keep-K kept" if after_keep_k else "the selection"
        raise LensError(f"Only {len(kept)} model(s) ({', '.join(kept) or 'none'}) have a comparison in {where}; "
                        "a ranking needs at least two.")
    return stack.restrict_models(kept), dropped


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
    pool: str = "perturbed",
    bootstrap: int = 0,
    seed: int = 0,
    policy: str = DEFAULT_POLICY,
    ranker_params: dict | None = None,
    level: float = 0.95,
    bootstrap_unit: str | None = None,
) -> Leaderboard:
    """The leaderboard of a stored dataset under the given filters, truncation and ranker."""
    verdicts = store.verdicts(dataset, judge=judge, category=category)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    cells = graph_cells(verdicts, policy=policy)
    if keep_k is not None:  # refuse keep-K where no graph can hold a cycle before any (T, n, n) array
        from .graph_buckets import buckets_from_cells
        from .truncation import keep_k_graphs

        keep_k_graphs(buckets_from_cells(cells), keep_k, mu=mu, per_category=per_category, pool=pool)
    stack = stack_from_cells(cells)
    extra = {
        "dataset": dataset,
        "dataset_version": store.dataset_version(dataset),
        "judge": judge,
        "judges": sorted(verdicts["judge"].dropna().unique().tolist()),
        "category": category,
        "n_invalid_verdicts": int((verdicts["winner"] == "invalid").sum()),
    }
    return leaderboard_from_stack(
        stack, ranker=ranker, keep_k=keep_k, mu=mu, per_category=per_category, pool=pool, bootstrap=bootstrap, seed=seed,
        ranker_params=ranker_params, level=level, extra_params=extra, bootstrap_unit=bootstrap_unit,
    )


def compare_to_reference(board: Leaderboard, reference: pd.Series) -> dict[str, Any]:
    """The four ranking distances between a leaderboard and reference ratings, on shared models."""
    ref_ranks = ranks_from_scores(reference.astype(np.float64))
    out: dict[str, Any] = all_distances(board.ranks, ref_ranks)
    shared = [m for m in board.table["model"] if m in set(reference.index)]
    out["models"] = " ".join(shared)
    return out


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def board_notes(board: Leaderboard) -> list[str]:
    """One sentence per fit detail a reader of the table should know (regularisation, convergence,
    nu, Elo's K and order, Kemeny exact or heuristic and its tie-break, PGED's mode, bootstrap
    regularisations, the policy for pairs never compared). The CLI prints them; the library never does."""
    p, d, r = board.params, board.result.details, board.params["ranker"]
    out: list[str] = []
    if p.get("keep_k") is not None:
        thr = p.get("threshold")
        thr_text = (", ".join(f"{k} {_fmt(v)}" for k, v in thr.items()) if isinstance(thr, dict) else _fmt(thr))
        out.append(
            f"keep-K: ranked the {p['n_graphs']} graph(s) of smallest S_mu = C3_bad + {_fmt(p['mu'])}*C4_bad "
            f"out of {p['n_graphs_pool']} in the {p['pool']} pool"
            f"{' (K per category)' if p.get('per_category') else ''}; threshold S_K = {thr_text}."
        )
        if p.get("keep_note"):
            out.append(f"keep-K: {p['keep_note']}")
    if p.get("dropped_models"):
        dropped = p["dropped_models"]
        one = len(dropped) == 1
        prefix = "keep-K: " if p.get("keep_k") is not None else ""
        out.append(f"{prefix}{', '.join(dropped)} {'has' if one else 'have'} no comparison in the ranked graphs "
                   f"and {'is' if one else 'are'} left off the board.")
    reg = d.get("regularisation")
    if reg and float(d.get("alpha", 0.0) or 0.0) > 0:
        out.append(f"{r}: {reg}.")
    if d.get("converged") is False:
        out.append(f"{r}: the fit did not converge ({d.get('convergence') or d.get('message', 'no reason given')}).")
    if r == "davidson":
        nu = d.get("nu")
        out.append(f"davidson: tie parameter nu = {_fmt(nu)}"
                   + (" (at its lower bound: no ties in the data)." if d.get("nu_at_lower_bound") else "."))
    if r == "elo":
        out.append(f"elo: K = {_fmt(d.get('k_factor'))}, base {_fmt(d.get('base'))}, scale {_fmt(d.get('scale'))}, "
                   f"initial rating {_fmt(d.get('init'))}, {d.get('n_updates')} updates; order: {d.get('order')}.")
    if r == "kemeny":
        if d.get("exact"):
            extra = (f"; {d['co_optimal_orders']} orders are co-optimal, tie-break: {d.get('tie_break')}"
                     if (d.get("co_optimal_orders") or 1) > 1 else "; the optimal order is unique")
            out.append(f"kemeny: exact (DP over subsets){extra}.")
        else:
            out.append(f"kemeny: heuristic ({d.get('method')}), not certified optimal.")
    if r == "pged":
        text = f"pged: {d.get('mode')}"
        if "aggregate" in d:
            text += f"; aggregate {d['aggregate']}; within a question: {d.get('prompt_ties')}"
            if (d.get("co_optimal_orders") or 1) > 1:
                text += f"; {d['co_optimal_orders']} co-optimal Kemeny orders"
        text += f"; delta ties: {d.get('delta_ties')}"
        if d.get("n_prompts_with_delta_ties"):
            text += f" ({d['n_prompts_with_delta_ties']} of {d.get('n_prompts')} questions had one)"
        out.append(text + f"; {d.get('n_removed_arcs')} arc(s) removed by denoising (shown graph: delta ties "
                   "to the first name).")
    if r == "elspr":
        out.append(f"elspr: {d.get('pairs_discarded')} of {d.get('pairs_cleaned', 0) + d.get('pairs_discarded', 0)} "
                   "compared pairs discarded by the reconstruction.")
    if d.get("pairs_without_probability"):
        out.append(f"{r}: {d['pairs_without_probability']} compared pair(s) had no judge probability and count "
                   "as hard outcomes.")
    if r in COUNTING_RANKERS and p.get("n_uncompared_pairs"):
        out.append(f"{r}: {p['n_uncompared_pairs']} pair(s) of models were never compared; {d.get('uncompared_pairs')}.")
    if p.get("bootstrap"):
        if p.get("bootstrap_unit") == "prompt":
            out.append(f"bootstrap: resampled prompts (all graphs of a prompt together), {p['bootstrap']} times"
                       + (" (per-prompt PGED's own unit)." if r == "pged" else "."))
        if p.get("bootstrap_n_undefined"):
            out.append(f"bootstrap: {p['bootstrap_n_undefined']} of {p['bootstrap']} resamples left some model without "
                       f"the comparisons its {r} score needs; that model's intervals use the other resamples.")
        if p.get("bootstrap_n_regularised"):
            out.append(f"bootstrap: {p['bootstrap_n_regularised']} of {p['bootstrap']} resamples needed the "
                       "stated regularisation.")
        if p.get("bootstrap_n_unconverged"):
            out.append(f"bootstrap: {p['bootstrap_n_unconverged']} of {p['bootstrap']} resample fits did not converge.")
        if p.get("bootstrap_method") == "one refit per resample":
            out.append(f"bootstrap: {r} has no batched form here; refitted once per resample.")
    if p.get("n_invalid_verdicts"):
        out.append(f"{p['n_invalid_verdicts']} invalid verdict(s) left out (never counted as ties).")
    return out
