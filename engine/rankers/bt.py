"""Half-tie Bradley-Terry (paper 000, Section 3.2): fit log-strengths to W~ = W + T/2.

P(i beats j) = sigmoid(theta_i - theta_j). Two solvers that must agree: a batched damped Newton
method (the default; the negative Hessian is the graph Laplacian with weights N_ij p_ij p_ji, made
invertible by the mean-zero constraint) and Hunter's (2004) minorization-maximization, both in
``engine.rankers.bt_solvers``. Both run on a
(B, n, n) stack of matrices at once, so bootstrap resamples cost one array operation, not B fits.

The MLE exists only when the comparison digraph (edge i -> j when W~_ij > 0) is strongly connected.
Otherwise (a model that never loses, or groups never compared) the fit adds ``alpha`` virtual ties
to every pair of models (alpha/2 to each side of W~) and says so in the result; ``on_degenerate=
"raise"`` refuses instead. Scores are natural-log strengths, mean-centred; ``scale="elo"`` gives
400 * log10 strengths (the Elo scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import LensError
from engine.graphs.reachability import strongly_connected_batch
from engine.graphs.stack import GraphStack
from engine.rankers.base import (
    RankResult,
    check_stack,
    register,
    series,
    single_thread_blas,
)
from engine.rankers.bt_solvers import DEFAULT_CHUNK, mm_batch, newton_batch

DEFAULT_ALPHA = 0.1
ELO_FACTOR = 400.0 / np.log(10.0)


@dataclass(frozen=True)
class BatchFit:
    """Scores (B, n) and per-fit diagnostics of a batched BT fit."""

    scores: np.ndarray
    iterations: int
    converged: np.ndarray
    regularised: np.ndarray


def regularise(
    wtilde: np.ndarray, alpha: float, on_degenerate: str = "regularize"
) -> tuple[np.ndarray, np.ndarray]:
    """Add alpha virtual ties to every pair where the comparison digraph is not strongly connected."""
    w = np.asarray(wtilde, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"expected a (B, n, n) array of half-tie win counts, got shape {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("half-tie win counts must be finite and non-negative")
    n = w.shape[1]
    off = ~np.eye(n, dtype=bool)
    edges = (w > 0) & off
    # every pair both ways: connected (n * n, not -1: the batch may be empty)
    ok = np.asarray((edges | ~off).reshape(w.shape[0], n * n).all(axis=1))
    if not ok.all():
        ok[~ok] = strongly_connected_batch(edges[~ok])
    bad = ~ok
    if bad.any():
        if on_degenerate == "raise":
            raise LensError(
                "The Bradley-Terry maximum-likelihood estimate does not exist for this selection: some model "
                "never loses (or never wins), or some groups of models were never compared with each other."
            )
        if alpha <= 0:
            raise LensError(
                "Bradley-Terry regularisation alpha must be positive when the MLE does not exist."
            )
        w = w.copy()
        w[bad] += (alpha / 2.0) * off
    return w, bad


def fit_bt_batch_info(
    wtilde: np.ndarray,
    *,
    solver: str = "newton",
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    tol: float = 1e-10,
    max_iter: int | None = None,
    theta0: np.ndarray | None = None,
    chunk: int = DEFAULT_CHUNK,
) -> BatchFit:
    """Batched half-tie BT with diagnostics: which fits were regularised, iterations, convergence.

    ``theta0`` (B, n) warm-starts the Newton solver (ignored by MM); the fits are done ``chunk``
    at a time. The solution does not depend on either (up to round-off).
    """
    if solver not in ("newton", "mm"):
        raise LensError(f"Unknown Bradley-Terry solver {solver!r}; choose newton or mm.")
    with single_thread_blas():
        w, bad = regularise(wtilde, alpha, on_degenerate)
        B = w.shape[0]
        if solver == "newton":
            parts = [newton_batch(w[s:s + chunk], tol=tol, max_iter=max_iter or 200,
                                  theta0=None if theta0 is None else theta0[s:s + chunk])
                     for s in range(0, B, max(1, int(chunk)))]
        else:
            parts = [mm_batch(w, tol=tol, max_iter=max_iter or 100_000)]
    if not parts:
        return BatchFit(np.zeros((0, w.shape[1])), 0, np.zeros(0, dtype=bool), bad)
    theta = np.concatenate([t for t, _, _ in parts])
    conv = np.concatenate([c for _, _, c in parts])
    return BatchFit(theta, max(it for _, it, _ in parts), conv, bad)


def fit_bt_batch(wtilde: np.ndarray, **kwargs) -> np.ndarray:
    """(B, n, n) half-tie win matrices W + T/2 → (B, n) mean-centred natural-log strengths."""
    return fit_bt_batch_info(wtilde, **kwargs).scores


def fit_bt(
    W: np.ndarray,
    T: np.ndarray | None = None,
    models: tuple[str, ...] | list[str] | None = None,
    *,
    solver: str = "newton",
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    scale: str = "log",
    ranker: str = "bt",
) -> RankResult:
    """Single half-tie BT fit from W (wins) and T (ties): W~ = W + T/2 (paper 000, Section 3.2)."""
    W = np.asarray(W, dtype=np.float64)
    wt = W if T is None else W + 0.5 * np.asarray(T, dtype=np.float64)
    n = wt.shape[0]
    models = tuple(models) if models is not None else tuple(str(i) for i in range(n))
    fit = fit_bt_batch_info(wt[None], solver=solver, alpha=alpha, on_degenerate=on_degenerate)
    theta = fit.scores[0]
    if scale == "elo":
        theta = theta * ELO_FACTOR
    elif scale != "log":
        raise LensError(f"Unknown Bradley-Terry scale {scale!r}; choose log or elo.")
    details = {
        "model": "half-tie Bradley-Terry (W + T/2)",
        "solver": solver,
        "iterations": int(fit.iterations),
        "converged": bool(fit.converged[0]),
        "scale": "natural log strength" if scale == "log" else "Elo (400 * log10 strength)",
        "regularisation": (
            f"the MLE does not exist (comparison graph not strongly connected); added {alpha} virtual "
            "tie(s) to every pair of models"
            if fit.regularised[0]
            else "none (the MLE exists)"
        ),
        "alpha": alpha if fit.regularised[0] else 0.0,
    }
    return RankResult(ranker, series(models, theta), details)


def soft_wins(stack: GraphStack) -> tuple[np.ndarray, int]:
    """Soft W~ (paper 001, soft-BT): sum of P(i beats j) over graphs; pairs without prob_a use W + T/2."""
    if stack.soft is None or not np.isfinite(stack.soft[stack.observed]).any():
        raise LensError(
            "Soft Bradley-Terry needs judge probabilities (a prob_a column), and this selection has none."
        )
    has_p = stack.observed & np.isfinite(stack.soft)
    hard = stack.wins.astype(np.float64) + 0.5 * stack.ties
    contrib = np.where(has_p, np.nan_to_num(stack.soft), np.where(stack.observed, hard, 0.0))
    return contrib.sum(axis=0), int((stack.observed & ~has_p).sum() // 2)


@register("bt", "half-tie Bradley-Terry on W + T/2 (log strengths, mean-centred)")
def bt(
    stack: GraphStack,
    *,
    solver: str = "newton",
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    scale: str = "log",
    soft: bool = False,
) -> RankResult:
    """Rank a stack by half-tie BT; ``soft=True`` uses the judge's probabilities as fractional wins."""
    check_stack(stack, "bt")
    if soft:
        wt, n_hard = soft_wins(stack)
        res = fit_bt(
            wt, None, stack.models, solver=solver, alpha=alpha, on_degenerate=on_degenerate, scale=scale
        )
        details = {
            **res.details,
            "model": "soft Bradley-Terry (wins weighted by the judge's probability, paper 001)",
            "pairs_without_probability": n_hard,
        }
        return RankResult(res.ranker, res.scores, details, dict(res.extras))
    W, T = stack.win_tie_matrices()
    return fit_bt(W, T, stack.models, solver=solver, alpha=alpha, on_degenerate=on_degenerate, scale=scale)
