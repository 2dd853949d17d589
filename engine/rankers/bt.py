"""Half-tie Bradley-Terry (paper 000, Section 3.2): fit log-strengths to W~ = W + T/2.

P(i beats j) = sigmoid(theta_i - theta_j). Two solvers that must agree: a batched damped Newton
method (the default; the negative Hessian is the graph Laplacian with weights N_ij p_ij p_ji, made
invertible by the mean-zero constraint) and Hunter's (2004) minorization-maximization, both in
``engine.rankers.bt_solvers``. Both run on a
(B, n, n) stack of matrices at once, so bootstrap resamples cost one array operation, not B fits.
Above ``DENSE_MODELS_MAX`` models (where the dense kernels' (pairs, n) incidence is cubic) each fit runs
on the list of compared pairs instead (``fit_bt_pairs``: memory O(pairs + n)).

The MLE exists only when the comparison digraph (edge i -> j when W~_ij > 0) is strongly connected.
Otherwise (a model that never loses, or groups never compared) the fit adds ``alpha`` virtual ties
to every pair of models (alpha/2 to each side of W~) and says so in the result; ``on_degenerate=
"raise"`` refuses instead. Scores are natural-log strengths, mean-centred; ``scale="elo"`` gives
1000 + 400 * log10 strengths (the Elo-like scale, ``engine.rankers.elo_scale``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.errors import LensError
from engine.foreground import awaited, in_background
from engine.graphs.reachability import strongly_connected_batch
from engine.graphs.stack import GraphStack
from engine.rankers.base import (
    ModelScores,
    RankResult,
    check_stack,
    register,
    single_thread_blas,
)
from engine.rankers.bt_solvers import (
    DENSE_MODELS_MAX,
    mm_batch,
    mm_pairs,
    newton_batch,
    newton_chunk,
    newton_pairs,
    newton_threads,
)
from engine.rankers.elo_scale import ELO_FACTOR as ELO_FACTOR  # re-exported: its home is elo_scale
from engine.rankers.elo_scale import to_elo_scale

DEFAULT_ALPHA = 0.1
COMPLETE_PAIRS_MAX = 5_000_000
"""Most virtual pairs a regularised fit on the pair list may add (every pair of models gets alpha virtual
ties; about 3,160 models): above it the fit is refused in one sentence before anything that size is
built (the pair arrays of the fit cost about 120 bytes a pair)."""


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


def strongly_connected_pairs(n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """Is the comparison digraph (edge i -> j when W~_ij = a > 0, j -> i when W~_ji = b > 0, over the
    listed pairs) strongly connected? O(pairs + n) (scipy's strong components)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if n <= 1:
        return True
    src = np.concatenate([i[a > 0], j[b > 0]])
    dst = np.concatenate([j[a > 0], i[b > 0]])
    graph = coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    return connected_components(graph, directed=True, connection="strong", return_labels=False) == 1


def regularise_pairs(
    n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray, alpha: float,
    on_degenerate: str = "regularize", ranker: str = "Bradley-Terry",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """``regularise`` on a pair list (i < j, a = W~_ij, b = W~_ji): the pairs unchanged when the
    comparison digraph is strongly connected, else every pair of models with alpha / 2 virtual ties
    added each way (refused above ``COMPLETE_PAIRS_MAX`` pairs). Returns (i, j, a, b, regularised)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if (a < 0).any() or (b < 0).any() or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("half-tie win counts must be finite and non-negative")
    if strongly_connected_pairs(n, i, j, a, b):
        return i, j, a, b, False
    if on_degenerate == "raise":
        raise LensError(
            f"The {ranker} estimate does not exist for this selection: some model "
            "never loses (or never wins), or some groups of models were never compared with each other."
        )
    if alpha <= 0:
        raise LensError(f"{ranker} regularisation alpha must be positive when the MLE does not exist.")
    fi, fj, (fa, fb) = complete_pairs(n, i, j, a, b, ranker=ranker)
    return fi, fj, fa + alpha / 2.0, fb + alpha / 2.0, True


def complete_pairs(
    n: int, i: np.ndarray, j: np.ndarray, *values: np.ndarray, ranker: str = "Bradley-Terry"
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Every pair i < j of n models (row-major), with each of ``values`` (given on the pairs (i, j))
    placed on its pair and 0 elsewhere: what a regularisation that touches every pair needs. Refused in
    one sentence above ``COMPLETE_PAIRS_MAX`` pairs, before anything that size is allocated."""
    total = n * (n - 1) // 2
    if total > COMPLETE_PAIRS_MAX:
        raise LensError(
            f"The {ranker} fit on these {n:,} models needs virtual comparisons on all {total:,} pairs (the "
            f"comparison graph is not strongly connected), above the limit of {COMPLETE_PAIRS_MAX:,} "
            "pairs; select fewer models or a strongly connected part (e.g. by judge or category)."
        )
    fi, fj = np.triu_indices(n, 1)
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    at = (i * (2 * n - i - 3)) // 2 + j - 1  # row-major position of (i, j) among the pairs
    out = []
    for v in values:
        full = np.zeros(total)
        full[at] = v
        out.append(full)
    return fi.astype(np.int64), fj.astype(np.int64), out


def fit_bt_pairs_info(
    n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray, *, solver: str = "newton",
    alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize", tol: float = 1e-10,
    max_iter: int | None = None, theta0: np.ndarray | None = None,
) -> BatchFit:
    """One half-tie BT fit from the compared pairs (i < j, a = W~_ij, b = W~_ji) as a one-row
    ``BatchFit``. Up to ``DENSE_MODELS_MAX`` models the dense batched kernels run (the numbers of
    ``fit_bt_batch_info``); above, the pair-list solvers ``newton_pairs`` / ``mm_pairs`` (memory
    O(pairs + n)). ``theta0`` (n,): a warm start for the pair-list Newton solver (``newton_pairs``)."""
    if solver not in ("newton", "mm"):
        raise LensError(f"Unknown Bradley-Terry solver {solver!r}; choose newton or mm.")
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    if n <= DENSE_MODELS_MAX:
        w = np.zeros((1, n, n))
        w[0, i, j], w[0, j, i] = a, b
        return fit_bt_batch_info(w, solver=solver, alpha=alpha, on_degenerate=on_degenerate, tol=tol,
                                 max_iter=max_iter)
    i, j, a, b, bad = regularise_pairs(n, i, j, a, b, alpha, on_degenerate)
    if solver == "newton":
        theta, it, conv = newton_pairs(n, i, j, a, b, tol=tol, max_iter=max_iter or 200, theta0=theta0)
    else:
        theta, it, conv = mm_pairs(n, i, j, a, b, tol=tol, max_iter=max_iter or 100_000)
    return BatchFit(theta[None], it, np.array([conv]), np.array([bad]))


def fit_bt_batch_info(
    wtilde: np.ndarray,
    *,
    solver: str = "newton",
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    tol: float = 1e-10,
    max_iter: int | None = None,
    theta0: np.ndarray | None = None,
    chunk: int | None = None,
) -> BatchFit:
    """Batched half-tie BT with diagnostics: which fits were regularised, iterations, convergence.

    ``theta0`` (B, n) warm-starts the Newton solver (ignored by MM); the fits are done ``chunk`` at a time
    (default ``newton_chunk(n)``). The solution does not depend on the start (up to round-off) nor on the
    chunk (a fit's iterations read its own row only).
    """
    if solver not in ("newton", "mm"):
        raise LensError(f"Unknown Bradley-Terry solver {solver!r}; choose newton or mm.")
    w = np.asarray(wtilde, dtype=np.float64)
    if w.ndim == 3 and w.shape[1] == w.shape[2] and w.shape[1] > DENSE_MODELS_MAX:
        # many models: one pair-list fit per matrix (the dense kernels' (pairs, n) incidence is cubic)
        return _fit_each_on_pairs(w, solver=solver, alpha=alpha, on_degenerate=on_degenerate, tol=tol,
                                  max_iter=max_iter)
    with single_thread_blas():
        w, bad = regularise(wtilde, alpha, on_degenerate)
        B = w.shape[0]
        chunk = max(1, newton_chunk(w.shape[1]) if chunk is None else int(chunk))
        if solver == "newton":
            threads = newton_threads(B, w.shape[1])
            held = threads > 1 and in_background()
            # two threads: at least two parts (background work: four, see _background_parts), each at most
            # half a chunk (the fits in work at once, and so the memory, stay those of one chunk); at least
            # one fit a part (an empty batch has no part)
            size = max(1, min(-(-chunk // threads), -(-B // (2 * threads if held else threads))))
            starts = list(range(0, B, size))

            def part(s: int) -> tuple[np.ndarray, int, np.ndarray]:
                return newton_batch(w[s:s + size], tol=tol, max_iter=max_iter or 200,
                                    theta0=None if theta0 is None else theta0[s:s + size])

            if held:
                parts = _background_parts(part, starts)
            elif threads > 1:
                parts = _on_two_threads(part, starts)
            else:
                parts = [part(s) for s in starts]
        else:
            parts = [mm_batch(w, tol=tol, max_iter=max_iter or 100_000)]
    if not parts:
        return BatchFit(np.zeros((0, w.shape[1])), 0, np.zeros(0, dtype=bool), bad)
    theta = np.concatenate([t for t, _, _ in parts])
    conv = np.concatenate([c for _, _, c in parts])
    return BatchFit(theta, max(it for _, it, _ in parts), conv, bad)


def _on_two_threads(part: Callable[[int], tuple], starts: list[int]) -> list[tuple]:
    """``part(s)`` of every start, in order, over two threads (numpy releases the interpreter lock inside each
    operation on arrays of the sizes that get here)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="lens-newton") as pool:
        return list(pool.map(part, starts))


def _background_parts(part: Callable[[int], tuple], starts: list[int]) -> list[tuple]:
    """Background work's parts (the app's warming: ``engine.foreground.in_background``), one at a time on its
    own thread, leaving the other core to the reader's runs and the browser, until a page's run waits for
    background work (``engine.foreground.awaited``: the next move needs this board and would wait for one
    thread's fits): the parts left then run on two threads. The same results either way (a fit does not
    depend on its batch)."""
    out: list[tuple] = []
    for k, s in enumerate(starts):
        if len(starts) - k > 1 and awaited():
            return out + _on_two_threads(part, starts[k:])
        out.append(part(s))
    return out


def _fit_each_on_pairs(w: np.ndarray, **kwargs) -> BatchFit:
    """``fit_bt_batch_info`` above ``DENSE_MODELS_MAX`` models: each (n, n) matrix fitted on its pairs."""
    n = w.shape[1]
    fits = []
    with single_thread_blas():
        for wk in w:
            i, j = np.nonzero(np.triu((wk + wk.T) > 0, 1))
            fits.append(fit_bt_pairs_info(n, i, j, wk[i, j], wk[j, i], **kwargs))
    if not fits:
        return BatchFit(np.zeros((0, n)), 0, np.zeros(0, dtype=bool), np.zeros(0, dtype=bool))
    return BatchFit(np.concatenate([f.scores for f in fits]), max(f.iterations for f in fits),
                    np.concatenate([f.converged for f in fits]),
                    np.concatenate([f.regularised for f in fits]))


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
    if wt.ndim != 2 or wt.shape[0] != wt.shape[1]:
        raise ValueError(f"expected an (n, n) array of half-tie win counts, got shape {wt.shape}")
    if (wt < 0).any() or not np.isfinite(wt).all():
        raise ValueError("half-tie win counts must be finite and non-negative")
    i, j = np.nonzero(np.triu((wt + wt.T) > 0, 1))
    return fit_bt_pairs(wt.shape[0], (i, j, wt[i, j], wt[j, i]), models, solver=solver, alpha=alpha,
                        on_degenerate=on_degenerate, scale=scale, ranker=ranker)


def fit_bt_pairs(
    n: int,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    models: tuple[str, ...] | list[str] | None = None,
    *,
    solver: str = "newton",
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    scale: str = "log",
    ranker: str = "bt",
    theta0: np.ndarray | None = None,
) -> RankResult:
    """Single half-tie BT fit from the compared pairs (i, j, a, b): i < j, a = W~_ij, b = W~_ji
    (``fit_bt_pairs_info``; ``theta0``: a warm start on the log scale, many models only)."""
    models = tuple(models) if models is not None else tuple(str(k) for k in range(n))
    i, j, a, b = pairs
    with single_thread_blas():
        fit = fit_bt_pairs_info(n, i, j, a, b, solver=solver, alpha=alpha, on_degenerate=on_degenerate,
                                theta0=theta0)
    theta = fit.scores[0]
    if scale == "elo":
        theta = to_elo_scale(theta)
    elif scale != "log":
        raise LensError(f"Unknown Bradley-Terry scale {scale!r}; choose log or elo.")
    details = {
        "model": "half-tie Bradley-Terry (W + T/2)",
        "solver": solver,
        "iterations": int(fit.iterations),
        "converged": bool(fit.converged[0]),
        "scale": "natural log strength" if scale == "log" else "Elo-like (1000 + 400 * log10 strength)",
        "regularisation": (
            f"the MLE does not exist (comparison graph not strongly connected); added {alpha} virtual "
            "tie(s) to every pair of models"
            if fit.regularised[0]
            else "none (the MLE exists)"
        ),
        "alpha": alpha if fit.regularised[0] else 0.0,
    }
    return RankResult(ranker, ModelScores(tuple(models), np.asarray(theta, dtype=np.float64)), details)


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
