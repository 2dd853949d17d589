"""The PPR leaderboard: rank-sets and win-rate estimates of a stored dataset, one block per proxy judge.

Methods (``PPR_METHODS``): ``ppr`` (the human judge's verdicts anchor each proxy's, ``engine.ranking.ppr``),
and the two baselines: ``human-only`` (every counted verdict of the human judge) and ``proxy-only`` (every
counted verdict of each proxy, on the models the human compared when ``human`` is given, else on the
proxy's own). Columns (``PPR_COLUMNS``): model, rank_set_low, rank_set_high (rank 1 the best), win_rate
(the estimate), std_error, then proxy, method, lambda (the proxy's weight; PPR only), n_human and n_proxy
(the verdicts each judge contributed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.ranking.ppr import VARIANCES, Estimate, ppr_estimate, rank_sets, win_rate_estimate
from engine.ranking.ppr_data import check_judges_distinct, judge_models, read_judge_battles, read_ppr_inputs

if TYPE_CHECKING:
    from engine.store.connection import Store

PPR_METHODS: tuple[str, ...] = ("ppr", "human-only", "proxy-only")
PPR_COLUMNS: tuple[str, ...] = ("model", "rank_set_low", "rank_set_high", "win_rate", "std_error", "proxy",
                                "method", "lambda", "n_human", "n_proxy")


@dataclass
class PprBoard:
    """The table, the parameters that made it and the notes printed below it."""

    table: pd.DataFrame
    params: dict
    notes: list[str] = field(default_factory=list)


def check_alpha(alpha: float) -> float:
    """alpha is the miss probability of the rank-sets: a number strictly between 0 and 1."""
    if not (isinstance(alpha, float | int) and math.isfinite(alpha) and 0.0 < alpha < 1.0):
        raise LensError(f"--alpha is the rank-sets' miss probability and must be strictly between 0 and 1; "
                        f"got {alpha}.")
    return float(alpha)


def _block(models: list[str], est: Estimate, alpha: float, *, method: str, proxy: str, n_human: int,
           n_proxy: int) -> pd.DataFrame:
    """One method's rows, best estimate first (ties by name)."""
    low, high = rank_sets(est.theta, est.cov, alpha)
    block = pd.DataFrame({
        "model": models, "rank_set_low": low.astype("int64"), "rank_set_high": high.astype("int64"),
        "win_rate": est.theta, "std_error": est.std_error, "proxy": proxy, "method": method,
        "lambda": np.nan if est.lam is None else est.lam, "n_human": n_human, "n_proxy": n_proxy,
    })
    return block.sort_values(["win_rate", "model"], ascending=[False, True], kind="stable")


def ppr_board(store: Store, dataset: str, *, method: str, human: str | None, proxies: list[str],
              alpha: float, ignore_ties: bool = False, human_n: int | None = None, seed: int = 0,
              variance: str = "paper") -> PprBoard:
    """The rank-sets of ``method`` (module docstring) at level 1 - alpha."""
    alpha = check_alpha(alpha)
    if human_n is not None and method != "ppr":
        raise LensError("--human-n keeps a few of the human's labelled battles for PPR; give --method ppr.")
    if method not in PPR_METHODS:
        raise LensError(f"Unknown PPR method {method!r}; choose one of {', '.join(PPR_METHODS)}.")
    if method in ("ppr", "human-only") and not human:
        raise LensError(f"--method {method} needs the human judge: give --human JUDGE.")
    if method in ("ppr", "proxy-only") and not proxies:
        raise LensError(f"--method {method} needs a proxy judge: give --proxy JUDGE[,JUDGE].")
    check_judges_distinct(([human] if human else []) + list(proxies))
    if variance not in VARIANCES:
        raise LensError(f"Unknown PPR variance {variance!r}; choose one of {', '.join(VARIANCES)}.")
    params = {"method": method, "human": human, "proxies": proxies, "alpha": alpha,
              "ignore_ties": ignore_ties, "variance": variance}
    blocks, notes = [], []
    if method == "ppr":
        assert human is not None
        inputs = read_ppr_inputs(store, dataset, human, proxies, ignore_ties=ignore_ties, human_n=human_n,
                                 seed=seed)
        k = len(inputs.models)
        params.update(matched_by=inputs.matched_by, human_n=human_n, seed=seed)
        if inputs.left_out:
            notes.append(f"left out (a proxy never compared them): {', '.join(inputs.left_out)}.")
        for m in inputs.matches:
            est = ppr_estimate(k, m.human, m.proxy_labelled, m.unlabelled, variance=variance)
            blocks.append(_block(inputs.models, est, alpha, method="ppr", proxy=m.proxy, n_human=len(m.human),
                                 n_proxy=len(m.human) + len(m.unlabelled)))
            notes.append(f"{m.proxy}: {len(m.human):,} battles judged by both (matched by "
                         f"{inputs.matched_by}), {len(m.unlabelled):,} by {m.proxy} only, "
                         f"lambda = {est.lam:.4f}; "
                         f"{m.human_unmatched:,} {human} verdicts not used (no {m.proxy} verdict to match, a "
                         "model left out, or not drawn by --human-n)"
                         + (f", {m.proxy_other_models:,} {m.proxy} verdicts name a model left out"
                            if m.proxy_other_models else "") + ".")
    else:
        judges = [human] if method == "human-only" else proxies
        for judge in judges:
            assert judge is not None
            models = judge_models(store, dataset, human or judge, ignore_ties)
            battles = read_judge_battles(store, dataset, judge, models, ignore_ties)
            k = len(models)
            if k < 2 or len(battles) == 0:
                raise LensError(f"Judge {judge!r} has no counted verdict on two or more models in dataset "
                                f"{dataset!r}; there is nothing to rank.")
            counts = np.bincount(battles.model_a, minlength=k) + np.bincount(battles.model_b, minlength=k)
            if (counts == 0).any():
                missing = models[int(np.flatnonzero(counts == 0)[0])]
                raise LensError(f"Model {missing!r} is in no battle judged by {judge!r}; a one-judge "
                                "rank-set needs every model in a battle.")
            est = win_rate_estimate(k, battles, variance)
            blocks.append(_block(models, est, alpha, method=method,
                                 proxy="" if method == "human-only" else judge,
                                 n_human=len(battles) if method == "human-only" else 0,
                                 n_proxy=0 if method == "human-only" else len(battles)))
    ties = ", ties ignored" if ignore_ties else ""
    sizes = sorted({len(b) for b in blocks})  # one row per model in each block (proxies may rank other sets)
    ks = ", ".join(f"{k} models: {2 / k:.2g}" for k in sizes if k)
    caveat = (": the authors' covariance, which can make the rank-sets too narrow with many close models; "
              f"std_error is its square root, about 2/k (k = {ks}) of a per-model win rate's standard error "
              "when every pair has the same count (--ppr-variance per-model gives the per-model mean's)."
              if variance == "paper" else ".")
    notes.append(f"rank-sets at level {1 - alpha:g} (Chatzi et al. 2024; win rates count a tie as a win "
                 f"for neither model{ties}); variance {variance}{caveat}")
    table = pd.concat(blocks, ignore_index=True)[list(PPR_COLUMNS)]
    return PprBoard(table, params, notes)
