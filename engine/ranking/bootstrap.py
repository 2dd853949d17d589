"""Bootstrap confidence intervals for any ranker: resample graphs (prompts) with replacement.

Resampling T graphs with replacement gives graph t a multinomial count c_t (sum T). Every ranker
whose statistic is built from sums over graphs is batched: the resampled sums are one matrix product
c @ (per-graph contributions), and the fit runs on all B resamples at once:

- half-tie BT (Newton batch; identical graphs pooled first, exact) and ``scale="elo"`` (a rescale);
- Davidson (batched Newton on (theta, log nu), with the single fit's existence check and virtual wins);
- win rate, Copeland, score-of-win, the eq. 5 majority graph (counts over graphs);
- Borda / weight score (c @ per-graph points), pairwise majority (c @ per-graph "ranked above");
- Kemeny (c @ per-graph evidence, then one subset DP vectorised over B);
- ELSPR (its cleaned mask is fixed per graph: BT on c @ the cleaned wins and ties);
- Rank Centrality (batched transition matrices and stationary laws);
- PGED: global mode = Algorithm 1 on B ensembles at once; per-prompt mode = the per-question
  rankings are fixed whenever every graph of a question is drawn equally often (``unit="prompt"``,
  or one graph per question), so only the aggregation weights change (question multiplicities);
  otherwise the B x Q per-question ensembles are denoised in one batched greedy pass, each question
  weighted by the mean draw count of its graphs.

Elo (sequential by nature) and soft BT are refitted once per resample. ``method`` says which path
ran; ``n_regularised`` counts resamples that needed the stated regularisation and ``n_unconverged``
those whose fit did not converge.

Unit. ``unit="graph"`` resamples graphs, ``unit="prompt"`` whole prompts (all variants, judges and
turns of a prompt id together). The default follows the ranker's own unit: per-prompt PGED
aggregates per question, so it resamples prompts (resampling graphs there would also redraw the
per-question ensembles and shift every interval away from the point estimate: with every vicuna80
judge pooled, gpt4's 676.5 got [607, 656]); every other ranker resamples graphs.

Intervals are percentile intervals of scores and of ranks. Rank samples follow the point estimate's
rule: a ranker that states a total order (PGED: score, then name; Kemeny: its order, whose scores
are distinct) gives positions in that order; the others competition ranks with the tolerance of
``ranks_from_scores``. A resample that leaves a model without the comparisons its score needs (a
win rate, a normalised count) gives that model NaN there instead of stopping the bootstrap;
``n_undefined`` counts such resamples and each model's intervals use the resamples where it is
defined (its rank entry there is n, not counted).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from engine.errors import LensError
from engine.graphs.stack import DEFAULT_POLICY, GraphStack
from engine.rankers import RANKER_OBJECTS, rank, ranker_object
from engine.rankers.base import ordered_ranks_batch, ranks_from_scores_batch, single_thread_blas
from engine.rankers.bt import DEFAULT_ALPHA, fit_bt_batch_info
from engine.rankers.counts import VerdictCounts, verdict_counts
from engine.rankers.elspr import cleaned_contributions
from engine.rankers.kemeny import kemeny_orders_batch, scores_from_orders
from engine.rankers.pged import (
    AGGREGATES,
    DELTA_TIES,
    MODES,
    PROMPT_TIES,
    ensemble_descendants,
    pged_per_prompt_scores,
    question_ids,
)
from engine.rankers.simple import (
    borda_points,
    borda_scores,
    pairwise_majority_scores,
    ranking_above,
)
from engine.rankers.simple import graph_weights as ranker_weights


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
    n_unconverged: int = 0
    unit: str = "graph"
    n_undefined: int = 0

    def _ci(self, x: np.ndarray, integer: bool) -> pd.DataFrame:
        q = (1.0 - self.level) / 2.0
        x = np.where(np.isnan(self.samples), np.nan, np.asarray(x, dtype=np.float64))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a model undefined in every resample: NaN
            if integer:
                low = np.nanquantile(x, q, axis=0, method="lower")
                high = np.nanquantile(x, 1.0 - q, axis=0, method="higher")
            else:
                low, high = np.nanquantile(x, [q, 1.0 - q], axis=0)
        idx = pd.Index(list(self.models), name="model")
        return pd.DataFrame({"low": low, "high": high}, index=idx)

    @property
    def scores_ci(self) -> pd.DataFrame:
        """Per model, the percentile interval of its score over the resamples (low, high)."""
        return self._ci(self.samples, integer=False)

    @property
    def ranks_ci(self) -> pd.DataFrame:
        """Per model, the interval of its rank over the resamples (integers; Int64 where undefined)."""
        ci = self._ci(self.rank_samples, integer=True)
        if ci.isna().any().any():
            return ci.astype("Int64")
        return ci.astype(np.int64)


def _check(B: int, level: float) -> None:
    if int(B) < 1:
        raise LensError(f"The number of bootstrap resamples must be at least 1; got {B}.")
    if not 0.0 < level < 1.0:
        raise LensError(f"The confidence level must lie strictly between 0 and 1; got {level}.")


UNITS = ("graph", "prompt")
ORDERED_RANKERS = tuple(name for name, obj in RANKER_OBJECTS.items() if obj.ordered)
"""Rankers whose point rank is a position in a stated total order (score, then model name)."""


def default_unit(ranker: str, params: dict) -> str:
    """The ranker's own unit (``Ranker.default_unit``): prompts for per-prompt PGED, else graphs."""
    return ranker_object(ranker).default_unit(params)


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
    wb = wb.reshape(B, n, n).astype(np.float64)
    scores, n_reg, n_unconv, _ = ranker_object("bt").fit_counts_batch(wb, np.zeros_like(wb), **params)
    return scores, n_reg, n_unconv


def _sums(c: np.ndarray, per_graph: np.ndarray) -> np.ndarray:
    """(B, T) counts @ (T, n, n) per-graph arrays → (B, n, n) resampled sums (one product)."""
    T, n, _ = per_graph.shape
    return (c.astype(np.float64) @ per_graph.reshape(T, n * n).astype(np.float64)).reshape(-1, n, n)


def _allowed(ranker: str, params: dict, keys: tuple[str, ...]) -> bool:
    return set(params) <= set(keys)


def _batched(stack: GraphStack, ranker: str, c: np.ndarray, params: dict) -> tuple[np.ndarray, int, int, str] | None:
    """All B resamples of ``ranker`` from the resampling counts c (B, T), or None (no batched form)."""
    wins, ties = stack.wins, stack.ties
    obj = ranker_object(ranker)
    if obj.counts and obj.has_batch(params):  # count rankers: their own batched fit on resampled W and T
        out = obj.fit_counts_batch(_sums(c, wins), _sums(c, ties), **params)
        if out is not None:
            scores, n_reg, n_unconv, how = out
            return scores, n_reg, n_unconv, f"W and T of every resample in one product, {how}"
    if ranker == "borda" and _allowed(ranker, params, ("weights", "normalize")):
        points, attainable = borda_points(stack)
        g = c * ranker_weights(stack, params.get("weights"))[None]
        out = borda_scores(points, attainable, g, params.get("normalize", False), strict=False)
        return out, 0, 0, "counts @ per-graph points"
    if ranker == "pairwise-majority" and _allowed(ranker, params, ("weights", "normalize")):
        g = c * ranker_weights(stack, params.get("weights"))[None]
        present = stack.observed.any(axis=2).astype(np.float64)
        both = present[:, :, None] * present[:, None, :]
        ranked = _sums(g, both) > 0
        out = pairwise_majority_scores(_sums(g, ranking_above(stack)), ranked, params.get("normalize", False),
                                       strict=False)
        return out, 0, 0, "counts @ per-graph 'ranked above' matrices"
    if ranker == "kemeny" and _allowed(ranker, params, ("source", "weights", "exact_max")):
        source = params.get("source", "pairs")
        if source not in ("pairs", "rankings"):
            return None
        g = c * ranker_weights(stack, params.get("weights"))[None]
        per_graph = wins + 0.5 * ties if source == "pairs" else ranking_above(stack)
        orders, exact, _ = kemeny_orders_batch(_sums(g, per_graph), params.get("exact_max", 12))
        how = "one subset DP vectorised over B" if exact else "local search per resample"
        return scores_from_orders(orders), 0, 0, f"counts @ per-graph evidence, {how}"
    if ranker == "elspr" and _allowed(ranker, params, ("alpha", "on_degenerate")):
        cw, ct, _ = cleaned_contributions(stack)
        with single_thread_blas():
            fit = fit_bt_batch_info(_sums(c, cw + 0.5 * ct), alpha=params.get("alpha", DEFAULT_ALPHA),
                                    on_degenerate=params.get("on_degenerate", "regularize"))
        return (fit.scores, int(fit.regularised.sum()), int((~fit.converged).sum()),
                "fixed cleaned pairs per graph, one batched BT fit")
    if ranker == "pged" and _allowed(ranker, params,
                                     ("weights", "mode", "aggregate", "prompt_ties", "delta_ties", "exact_max")):
        return _pged_batched(stack, c, params)
    return None


def _pged_batched(stack: GraphStack, c: np.ndarray, params: dict) -> tuple[np.ndarray, int, int, str] | None:
    mode = params.get("mode", "per-prompt")
    aggregate = params.get("aggregate", "weight-score")
    prompt_ties = params.get("prompt_ties", "average")
    delta_ties = params.get("delta_ties", "average")
    if mode not in MODES or aggregate not in AGGREGATES or prompt_ties not in PROMPT_TIES or delta_ties not in DELTA_TIES:
        return None  # the single fit names the mistake
    alpha = ranker_weights(stack, params.get("weights"))
    if mode == "global":
        desc, _, _ = ensemble_descendants(_sums(c * alpha[None], stack.wins), delta_ties)
        return desc, 0, 0, "Algorithm 1 on all B ensembles at once"
    q_of_t, qkeys = question_ids(stack)
    n_q = len(qkeys)
    cf = c.astype(np.float64)
    size = np.bincount(q_of_t, minlength=n_q).astype(np.float64)
    member = sparse.csr_matrix((np.ones(stack.T), (np.arange(stack.T), q_of_t)), shape=(stack.T, n_q))
    m = np.asarray(cf @ member) / size[None]  # mean draw count of each question's graphs
    hi = np.full((c.shape[0], n_q), -np.inf)
    lo = np.full((c.shape[0], n_q), np.inf)
    np.maximum.at(hi.T, q_of_t, cf.T)
    np.minimum.at(lo.T, q_of_t, cf.T)
    fixed = bool((hi == lo).all())
    kw = {"aggregate": aggregate, "prompt_ties": prompt_ties, "exact_max": params.get("exact_max", 12),
          "delta_ties": delta_ties}
    if fixed:
        score, _ = pged_per_prompt_scores(stack, alpha, m, **kw)
        return score, 0, 0, "fixed per-question rankings, aggregation weighted by question multiplicities"
    score, _ = pged_per_prompt_scores(stack, alpha, m, g=cf, **kw)
    return score, 0, 0, ("B x Q per-question ensembles denoised in one batched pass, questions weighted by the "
                         "mean draw count of their graphs")


def bootstrap(
    stack: GraphStack, ranker: str = "bt", B: int = 100, seed: int = 0, *, level: float = 0.95,
    unit: str | None = None, **params,
) -> BootstrapResult:
    """Percentile bootstrap of ``rank(stack, ranker, **params)`` over B resamples of graphs or prompts
    (``unit``; None: the ranker's own unit, see ``default_unit``)."""
    _check(B, level)
    if stack.T == 0:
        raise LensError("There is no graph to resample in this selection.")
    unit = default_unit(ranker, params) if unit is None else unit
    if unit not in UNITS:
        extra = (" (single votes are resampled only by the count rankers: bt, davidson, elo, winrate, copeland, "
                 "scorewin, rank-centrality, majority)" if unit == "vote" else "")
        raise LensError(f"Unknown bootstrap unit {unit!r}; choose graph or prompt{extra}.")
    rng = np.random.default_rng(seed)
    n_unconv = 0
    ranks = None
    if ranker == "bt" and not params.get("soft", False) and _allowed(
            ranker, params, ("solver", "alpha", "on_degenerate", "scale", "soft")):
        with single_thread_blas():
            samples, n_reg, n_unconv = _bt_batched(stack, B, rng, unit, params)
        method = "batched: multinomial graph weights, one matrix product, one batched Newton fit"
    else:
        weights = graph_weights(stack, B, rng, unit)
        out = _batched(stack, ranker, weights, params)
        if out is not None:
            samples, n_reg, n_unconv, how = out
            method = f"batched: multinomial graph weights, {how}"
        else:
            rows, rank_rows, n_reg = [], [], 0
            for b in range(B):  # rankers without a batched form: one fit per resample
                idx = np.repeat(np.arange(stack.T), weights[b])
                res = rank(stack.subset(idx), ranker, **params)
                rows.append(res.scores.reindex(list(stack.models)).to_numpy(np.float64))
                rank_rows.append(res.ranks.reindex(list(stack.models)).to_numpy(np.int64))
                n_reg += float(res.details.get("alpha", 0.0) or 0.0) > 0
                n_unconv += res.details.get("converged", True) is False
            samples = np.vstack(rows)
            ranks = np.vstack(rank_rows)  # each refit's own rank rule
            method = "one refit per resample"
    samples = np.asarray(samples, dtype=np.float64)
    if ranks is None:
        ranks = (ordered_ranks_batch(samples, stack.models) if ranker in ORDERED_RANKERS
                 else ranks_from_scores_batch(samples))
    return BootstrapResult(
        ranker, stack.models, int(B), int(seed), float(level), samples, ranks, method,
        int(n_reg), int(n_unconv), unit, int(np.isnan(samples).any(axis=1).sum()),
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
        int((~fit.converged).sum()),
    )
