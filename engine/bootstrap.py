"""Bootstrap confidence intervals for any ranker: resample graphs (prompts) with replacement.

Resampling T graphs with replacement gives graph t a multinomial count c_t (sum T). For half-tie
Bradley-Terry the resampled W~_b = sum_t c_bt W~_t is one matrix product, and all B fits run at
once in the batched Newton solver; identical graphs are pooled first (drawing T graphs uniformly is
the same law as drawing T times among distinct graph patterns with probability multiplicity / T),
which is exact and makes a million one-comparison prompts cheap. Davidson (batched Newton on theta and
log nu), win rate, Copeland and score-of-win are batched the same way; other rankers are refitted
once per resample (stated in ``method``). Intervals are percentile intervals of scores and ranks.
``unit="prompt"`` resamples whole prompts (all variants and judges of a prompt id together).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from .errors import LensError
from .graphs import DEFAULT_POLICY, GraphStack
from .rankers import rank
from .rankers.base import ranks_from_scores_batch, single_thread_blas, strongly_connected_batch
from .rankers.bt import DEFAULT_ALPHA, fit_bt_batch_info
from .rankers.counts import VerdictCounts, verdict_counts
from .rankers.davidson import fit_davidson_batch


@dataclass(frozen=True)
class BootstrapResult:
    """B resampled fits: ``samples`` (B, n) scores, ``rank_samples`` (B, n), and percentile CIs by model."""

    ranker: str
    models: tuple[str, ...]
    B: int
    seed: int
    level: float
    samples: np.ndarray
    rank_samples: np.ndarray
    method: str
    n_regularised: int = 0

    def _ci(self, x: np.ndarray, integer: bool) -> pd.DataFrame:
        q = (1.0 - self.level) / 2.0
        if integer:
            low = np.quantile(x, q, axis=0, method="lower")
            high = np.quantile(x, 1.0 - q, axis=0, method="higher")
        else:
            low, high = np.quantile(x, [q, 1.0 - q], axis=0)
        idx = pd.Index(list(self.models), name="model")
        return pd.DataFrame({"low": low, "high": high}, index=idx)

    @property
    def scores_ci(self) -> pd.DataFrame:
        return self._ci(self.samples, integer=False)

    @property
    def ranks_ci(self) -> pd.DataFrame:
        return self._ci(self.rank_samples, integer=True).astype(np.int64)


def _check(B: int, level: float) -> None:
    if int(B) < 1:
        raise LensError(f"The number of bootstrap resamples must be at least 1; got {B}.")
    if not 0.0 < level < 1.0:
        raise LensError(f"The confidence level must lie strictly between 0 and 1; got {level}.")


def _unit_ids(stack: GraphStack, unit: str) -> np.ndarray:
    if unit == "graph":
        return np.arange(stack.T)
    if unit == "prompt":
        return pd.factorize(stack.keys["prompt_id"].astype(str))[0]
    raise LensError(f"Unknown bootstrap unit {unit!r}; choose graph or prompt.")


def graph_weights(stack: GraphStack, B: int, rng: np.random.Generator, unit: str = "graph") -> np.ndarray:
    """(B, T) multinomial resampling counts per graph (per prompt cluster when unit='prompt')."""
    ids = _unit_ids(stack, unit)
    n_units = int(ids.max()) + 1
    c = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=B)
    return c[:, ids]


def _bt_batched(stack: GraphStack, B: int, rng: np.random.Generator, unit: str, params: dict) -> tuple:
    n = stack.n
    contrib = (stack.wins.astype(np.float32) + np.float32(0.5) * stack.ties).reshape(stack.T, n * n)
    if unit == "graph":
        packed = np.packbits(stack.adj.reshape(stack.T, n * n), axis=1)
        _, first, mult = np.unique(packed, axis=0, return_index=True, return_counts=True)
        counts = rng.multinomial(stack.T, mult / stack.T, size=B)
        wb = counts.astype(np.float32) @ contrib[first]
    else:
        wb = graph_weights(stack, B, rng, unit).astype(np.float32) @ contrib
    fit = fit_bt_batch_info(wb.reshape(B, n, n).astype(np.float64), **params)
    return fit.scores, int(fit.regularised.sum())


COUNT_RANKERS = ("winrate", "copeland", "scorewin")


def _counts_batched(stack: GraphStack, ranker: str, weights: np.ndarray) -> np.ndarray:
    """Win rate / Copeland / score-of-win for all resamples from W_b and T_b (one product each)."""
    n, T = stack.n, stack.T
    wins = stack.wins.reshape(T, n * n).astype(np.float64)
    ties = stack.ties.reshape(T, n * n).astype(np.float64)
    obs = stack.observed.reshape(T, n * n).astype(np.float64)
    wf = weights.astype(np.float64)
    W = (wf @ wins).reshape(-1, n, n)
    Tm = (wf @ ties).reshape(-1, n, n)
    if ranker == "winrate":
        games = (W + W.swapaxes(1, 2) + Tm).sum(axis=2)
        num = W.sum(axis=2) + 0.5 * Tm.sum(axis=2)
        return np.divide(num, games, out=np.full_like(num, np.nan), where=games > 0)
    compared = (wf @ obs).reshape(-1, n, n) > 0
    off = ~np.eye(n, dtype=bool)
    adj = ((W > W.swapaxes(1, 2)) | ((W == W.swapaxes(1, 2)) & compared)) & off
    if ranker == "scorewin":
        return adj.sum(axis=2).astype(np.float64)
    strict = adj & ~adj.swapaxes(1, 2)
    tie = adj & adj.swapaxes(1, 2)
    return strict.sum(axis=2) + 0.5 * tie.sum(axis=2)


def _davidson_batched(stack: GraphStack, weights: np.ndarray, params: dict) -> tuple[np.ndarray, int]:
    """Davidson for all resamples at once; degenerate resamples get the single fit's virtual ties."""
    n, T = stack.n, stack.T
    wf = weights.astype(np.float64)
    W = (wf @ stack.wins.reshape(T, n * n).astype(np.float64)).reshape(-1, n, n)
    Tm = (wf @ stack.ties.reshape(T, n * n).astype(np.float64)).reshape(-1, n, n)
    off = ~np.eye(n, dtype=bool)
    bad = ~strongly_connected_batch(((W + Tm) > 0) & off)
    if bad.any():
        if params.get("on_degenerate", "regularize") == "raise":
            raise LensError("The Davidson MLE does not exist for some bootstrap resample of this selection.")
        Tm[bad] += params.get("alpha", DEFAULT_ALPHA) * off
    theta, _, _ = fit_davidson_batch(W, Tm)
    return theta, int(bad.sum())


def bootstrap(
    stack: GraphStack, ranker: str = "bt", B: int = 100, seed: int = 0, *, level: float = 0.95,
    unit: str = "graph", **params,
) -> BootstrapResult:
    """Percentile bootstrap of ``rank(stack, ranker, **params)`` over B resamples of graphs."""
    _check(B, level)
    if stack.T == 0:
        raise LensError("There is no graph to resample in this selection.")
    rng = np.random.default_rng(seed)
    batched = ranker == "bt" and not params.get("soft", False) and params.get("scale", "log") == "log"
    if batched:
        bt_params = {k: v for k, v in params.items() if k in ("solver", "alpha", "on_degenerate")}
        with single_thread_blas():
            samples, n_reg = _bt_batched(stack, B, rng, unit, bt_params)
        method = "batched: multinomial graph weights, one matrix product, one batched Newton fit"
    elif ranker == "davidson" and params.get("scale", "log") == "log":
        with single_thread_blas():
            samples, n_reg = _davidson_batched(stack, graph_weights(stack, B, rng, unit), params)
        method = "batched: multinomial graph weights, one matrix product, one batched Newton fit on (theta, log nu)"
    elif ranker in COUNT_RANKERS and not params:
        samples = _counts_batched(stack, ranker, graph_weights(stack, B, rng, unit))
        if np.isnan(samples).any():
            raise LensError("Some resample left a model without any comparison, so its win rate is undefined.")
        n_reg, method = 0, "batched: multinomial graph weights, W and T of every resample in one product"
    else:
        weights = graph_weights(stack, B, rng, unit)
        rows, n_reg = [], 0
        for b in range(B):  # rankers without a batched form: one fit per resample
            idx = np.repeat(np.arange(stack.T), weights[b])
            res = rank(stack.subset(idx), ranker, **params)
            rows.append(res.scores.reindex(list(stack.models)).to_numpy(np.float64))
            n_reg += "does not exist" in str(res.details.get("regularisation", ""))
        samples = np.vstack(rows)
        method = "one refit per resample"
    return BootstrapResult(
        ranker, stack.models, int(B), int(seed), float(level), samples, ranks_from_scores_batch(samples), method,
        n_reg,
    )


def pattern_counts(vc: VerdictCounts) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Distinct graph patterns as sparse W~ rows (P, n*n) and their multiplicities (P,)."""
    n = vc.n
    if vc.single_pair_graphs():
        code = (vc.lo * n + vc.hi) * 3 + (vc.outcome.astype(np.int64) + 1)
        uniq, mult = np.unique(code, return_counts=True)
        pair, out = uniq // 3, uniq % 3 - 1
        lo, hi = pair // n, pair % n
        p = np.arange(uniq.size)
        lo_pts = np.where(out > 0, 1.0, np.where(out == 0, 0.5, 0.0))
    else:
        p, lo, hi = vc.graph, vc.lo, vc.hi
        o = vc.outcome
        lo_pts = np.where(o > 0, 1.0, np.where(o == 0, 0.5, 0.0))
        mult = np.ones(vc.n_graphs, dtype=np.int64)
    rows = np.concatenate([p, p])
    cols = np.concatenate([lo * n + hi, hi * n + lo])
    vals = np.concatenate([lo_pts, 1.0 - lo_pts])
    mat = sparse.csr_matrix((vals, (rows, cols)), shape=(mult.size, n * n))
    return mat, mult


def bootstrap_bt_verdicts(
    verdicts: pd.DataFrame, B: int = 100, seed: int = 0, *, level: float = 0.95, policy: str = DEFAULT_POLICY,
    **params,
) -> BootstrapResult:
    """Half-tie BT bootstrap straight from a verdict table, resampling graphs (prompts), batched."""
    _check(B, level)
    vc = verdict_counts(verdicts, policy)
    mat, mult = pattern_counts(vc)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(int(mult.sum()), mult / mult.sum(), size=B)
    wb = np.asarray((mat.T @ sparse.csr_matrix(counts.T.astype(np.float64))).T.todense())
    fit = fit_bt_batch_info(wb.reshape(B, vc.n, vc.n), **params)  # one batched Newton fit for all B
    return BootstrapResult(
        "bt", vc.models, int(B), int(seed), float(level), fit.scores, ranks_from_scores_batch(fit.scores),
        "batched over distinct graph patterns (verdict table)", int(fit.regularised.sum()),
    )
