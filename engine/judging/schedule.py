"""Which pairs to judge: full round robin, or SWIM (paper 001, Appendix E, Algorithm 1).

Round robin: every unordered pair of models on every prompt instance (the protocol decides whether
both presentation orders are asked). SWIM adds models one at a time in a random order: a newcomer
is first compared with one random ranked model on every prompt, then with the ranked models whose
current Bradley–Terry score is closest to its own, ``ceil(max(log2 s, 1))`` opponents in all where
``s`` is the number already ranked, refitting BT after each opponent. That is about log2 M
comparisons per prompt instead of M - 1. ``swim_add`` runs that insertion step alone, to add one
model to a leaderboard whose verdicts are already stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd


def round_robin_pairs(models: list[str]) -> list[tuple[str, str]]:
    """All unordered pairs, each as (a, b) with a < b, in a fixed order."""
    return list(combinations(sorted(models), 2))


def bt_scores(
    models: list[str], verdicts: pd.DataFrame, *, prior: float = 0.1, iters: int = 10_000, tol: float = 1e-10
) -> np.ndarray:
    """Half-tie Bradley–Terry log-strengths (mean-centred) by the shared Newton kernel
    (``engine.rankers.bt``).

    Wins count 1, ties 1/2 to each side (paper 000, Section 3); ``prior`` pseudo-wins each way on
    every pair keep the estimate finite when a model has won (or lost) everything, which happens
    early in SWIM. Invalid verdicts are ignored.
    """
    idx = {m: i for i, m in enumerate(models)}
    n = len(models)
    w = np.full((n, n), prior, dtype=float)
    np.fill_diagonal(w, 0.0)
    if not verdicts.empty:
        v = verdicts[
            verdicts["winner"].isin(["A", "B", "tie"])
            & verdicts["model_a"].isin(idx)
            & verdicts["model_b"].isin(idx)
        ]
        a = v["model_a"].map(idx).to_numpy(int)
        b = v["model_b"].map(idx).to_numpy(int)
        win = v["winner"].to_numpy()
        np.add.at(w, (a[win == "A"], b[win == "A"]), 1.0)
        np.add.at(w, (b[win == "B"], a[win == "B"]), 1.0)
        np.add.at(w, (a[win == "tie"], b[win == "tie"]), 0.5)
        np.add.at(w, (b[win == "tie"], a[win == "tie"]), 0.5)
    if n < 2:
        return np.zeros(n)
    from engine.rankers.bt import fit_bt_batch_info  # the one BT kernel (the prior keeps the MLE finite)

    fit = fit_bt_batch_info(w[None], tol=tol, max_iter=max(200, iters // 50))
    return fit.scores[0]


@dataclass(frozen=True)
class SwimResult:
    """The order models joined, each comparison made (newcomer, opponent) and the final BT scores."""

    join_order: tuple[str, ...]
    comparisons: tuple[tuple[str, str], ...]
    scores: pd.Series


def opponents_for(s: int) -> int:
    """How many ranked models a newcomer meets when ``s`` are ranked: ceil(max(log2 s, 1)), at most s."""
    return min(s, math.ceil(max(math.log2(s), 1.0))) if s > 0 else 0


def _fit(group: list[str], frames: list[pd.DataFrame]) -> dict[str, float]:
    return dict(zip(group, bt_scores(group, pd.concat(frames, ignore_index=True)), strict=True))


def _insert(
    p: str,
    ranked: list[str],
    frames: list[pd.DataFrame],
    judge_pair: Callable[[str, str], pd.DataFrame],
    rng: np.random.Generator,
    comparisons: list[tuple[str, str]],
) -> None:
    """Algorithm 1's insertion step: newcomer ``p`` meets a random ranked model, then the ranked
    models closest to it in BT score (refitted on ``frames`` after each), ``opponents_for`` in all.
    New verdict frames are appended to ``frames`` and the pairs to ``comparisons``."""
    s = len(ranked)
    c = opponents_for(s)
    x = ranked[int(rng.integers(s))]
    rest = [m for m in ranked if m != x]
    frames.append(judge_pair(p, x))
    comparisons.append((p, x))
    group = ranked + [p]
    beta = _fit(group, frames)
    for _ in range(c - 1):
        o = min(rest, key=lambda m: (abs(beta[m] - beta[p]), m))
        rest.remove(o)
        frames.append(judge_pair(p, o))
        comparisons.append((p, o))
        beta = _fit(group, frames)


def swim_comparisons(m: int) -> int:
    """Model pairs SWIM judges to rank ``m`` models from scratch."""
    return sum(opponents_for(s) for s in range(1, m))


def swim(
    models: list[str],
    judge_pair: Callable[[str, str], pd.DataFrame],
    *,
    seed: int,
) -> SwimResult:
    """Run SWIM; ``judge_pair(p, x)`` judges newcomer p against x on every prompt, returning verdict rows."""
    rng = np.random.default_rng(seed)
    unranked = sorted(models)
    order = list(rng.permutation(len(unranked)))
    queue = [unranked[i] for i in order]
    ranked = [queue.pop(0)]
    comparisons: list[tuple[str, str]] = []
    frames: list[pd.DataFrame] = []
    while queue:
        p = queue.pop(0)
        _insert(p, ranked, frames, judge_pair, rng, comparisons)
        ranked.append(p)
    allv = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["model_a", "model_b", "winner"])
    )
    final = pd.Series(bt_scores(ranked, allv), index=ranked).sort_values(ascending=False)
    return SwimResult(tuple(unranked[i] for i in order), tuple(comparisons), final)


def swim_add(
    newcomer: str,
    ranked: list[str],
    verdicts: pd.DataFrame,
    judge_pair: Callable[[str, str], pd.DataFrame],
    *,
    seed: int,
) -> SwimResult:
    """Add one model to an existing leaderboard with Algorithm 1's insertion step.

    ``verdicts`` (model_a, model_b, winner) are the stored verdicts among the ``ranked`` models; the
    BT scores fitted on them (plus each new comparison) pick the opponents, so ``newcomer`` meets
    ``opponents_for(len(ranked))`` = ceil(log2 M) models on every prompt instead of M.
    """
    if newcomer in ranked:
        raise ValueError("the newcomer is already ranked")
    rng = np.random.default_rng(seed)
    ranked = sorted(ranked)
    keep = verdicts["model_a"].isin(ranked) & verdicts["model_b"].isin(ranked)
    frames = [verdicts.loc[keep, ["model_a", "model_b", "winner"]]]
    comparisons: list[tuple[str, str]] = []
    _insert(newcomer, ranked, frames, judge_pair, rng, comparisons)
    group = ranked + [newcomer]
    final = pd.Series(bt_scores(group, pd.concat(frames, ignore_index=True)), index=group)
    return SwimResult((*ranked, newcomer), tuple(comparisons), final.sort_values(ascending=False))
