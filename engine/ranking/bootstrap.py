"""Bootstrap confidence intervals for any ranker: resample graphs (prompts) with replacement.

Resampling T graphs with replacement gives graph t a multinomial count c_t (sum T). Every ranker
whose statistic is built from sums over graphs is batched: the resampled sums are one matrix product
c @ (per-graph contributions), and the fit runs on all B resamples at once. Each ranker's object owns
its batched form (``Ranker.batched_bootstrap``, most in ``engine.rankers.graph_batch``); this module
draws the counts, asks the object, and refits once per resample when it has none:

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
rule: competition ranks with the tolerance of ``ranks_from_scores`` (equal scores share a rank, no
name decides). A resample that leaves a model without the comparisons its score needs (a
win rate, a normalised count) gives that model NaN there instead of stopping the bootstrap;
``n_undefined`` counts such resamples and each model's intervals use the resamples where it is
defined (its rank entry there is n, not counted). A resample that draws no graph comparing a model
counts as undefined for it too (its score there would be the regularisation's alone). An interval
that the resamples cannot estimate (defined in fewer than two, or the same score in every one:
``BootstrapResult.not_estimable``) is NaN, never zero width.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.stack import DEFAULT_POLICY, GraphStack
from engine.rankers import rank, ranker_object
from engine.rankers.base import ranks_from_scores_batch
from engine.rankers.bt import fit_bt_batch_info
from engine.rankers.counts import VerdictCounts, verdict_counts

if TYPE_CHECKING:
    from scipy import sparse


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

    @property
    def not_estimable(self) -> pd.Series:
        """``not_estimable_reasons`` as a Series by model (name ``not_estimable``)."""
        return pd.Series(self.not_estimable_reasons(), index=pd.Index(list(self.models), name="model"),
                         name="not_estimable", dtype=object)

    def not_estimable_reasons(self) -> list[str]:
        """Per model (in ``models`` order), why its interval cannot be estimated from these resamples ('' when
        it can).

        A percentile interval needs resamples that differ. It cannot be estimated when the model's
        score is defined in fewer than two resamples (a model absent from the resamples, B = 1), or
        when every resample gives every model the same score (within 1e-9 relative): the resamples
        then hold no variation at all (one verdict, verdicts all one way, one distinct unit), and a
        zero-width interval would claim a certainty the data never showed. One model's constant score
        among others that vary is a finding, not a failure (a leader first in every resample: Kemeny's
        gpt4 on vicuna80 has 8 models below it in all 100), so it keeps its interval."""
        x = np.asarray(self.samples, dtype=np.float64)
        defined = (~np.isnan(x)).sum(axis=0)
        hi = _over_defined_columns(lambda d: np.nanmax(d, axis=0), x, defined)
        lo = _over_defined_columns(lambda d: np.nanmin(d, axis=0), x, defined)
        flat = (hi - lo) <= ESTIMABLE_RTOL * np.maximum(1.0, np.maximum(np.abs(hi), np.abs(lo)))
        no_variation = bool(flat[defined >= 2].all())  # every model the same in every resample
        why = [
            f"defined in {'none' if d == 0 else 'only one'} of {self.B} resample(s)" if d < 2
            else "the same score in every resample" if no_variation else ""
            for d in defined
        ]
        return why

    def interval_bounds(self, ranks: bool) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) float64 arrays in ``models`` order: the percentile interval of the scores, or with
        ``ranks`` of the ranks (lower / higher order statistics); NaN where ``not_estimable`` gives a reason
        or the model is undefined in every resample. What ``scores_ci`` and ``ranks_ci`` hold, without
        pandas (the command line's board reads these)."""
        if ranks:
            return self._bounds(self.rank_samples, integer=True)
        return self._bounds(self.samples, integer=False)

    def _bounds(self, x: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray]:
        q = (1.0 - self.level) / 2.0
        why = np.asarray(self.not_estimable_reasons(), dtype=object)
        gone = np.isnan(self.samples) | (why != "")[None, :]
        x = np.where(gone, np.nan, np.asarray(x, dtype=np.float64))
        defined = (~np.isnan(x)).sum(axis=0)
        lower: Literal["lower", "linear"] = "lower" if integer else "linear"
        upper: Literal["higher", "linear"] = "higher" if integer else "linear"
        low = _over_defined_columns(lambda d: _column_quantile(d, q, lower), x, defined)
        high = _over_defined_columns(lambda d: _column_quantile(d, 1.0 - q, upper), x, defined)
        return low, high

    def _ci(self, x: np.ndarray, integer: bool) -> pd.DataFrame:
        low, high = self._bounds(x, integer)
        idx = pd.Index(list(self.models), name="model")
        return pd.DataFrame({"low": low, "high": high}, index=idx)

    @property
    def scores_ci(self) -> pd.DataFrame:
        """Per model, the percentile interval of its score over the resamples (low, high); NaN where
        ``not_estimable`` gives a reason."""
        return self._ci(self.samples, integer=False)

    @property
    def ranks_ci(self) -> pd.DataFrame:
        """Per model, the interval of its rank over the resamples (integers; Int64 with <NA> where
        undefined or ``not_estimable``)."""
        ci = self._ci(self.rank_samples, integer=True)
        if ci.isna().any().any():
            return ci.astype("Int64")
        return ci.astype(np.int64)


ESTIMABLE_RTOL = 1e-9
"""Resampled scores within this relative spread count as one value (``BootstrapResult.not_estimable``)."""


def _check(B: int, level: float) -> None:
    if int(B) < 1:
        raise LensError(f"The number of bootstrap resamples must be at least 1; got {B}.")
    if not 0.0 < level < 1.0:
        raise LensError(f"The confidence level must lie strictly between 0 and 1; got {level}.")


UNITS = ("graph", "prompt")


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


def pattern_weights(stack: GraphStack, B: int, rng: np.random.Generator) -> np.ndarray:
    """(B, T) resampling counts drawn per distinct graph pattern: one multinomial over the P distinct
    adjacency patterns (probabilities their multiplicities / T), each pattern's count put on its first
    graph. The same law as ``graph_weights`` for a statistic of the multiset of graphs, with P draws
    instead of T (``Ranker.pools_identical_graphs``)."""
    n = stack.n
    packed = np.packbits(stack.adj.reshape(stack.T, n * n), axis=1)
    _, first, mult = np.unique(packed, axis=0, return_index=True, return_counts=True)
    counts = rng.multinomial(stack.T, mult / stack.T, size=B)
    c = np.zeros((B, stack.T), dtype=counts.dtype)
    c[:, first] = counts
    return c


def absent_as_undefined(samples: np.ndarray, stack: GraphStack, weights: np.ndarray) -> np.ndarray:
    """``samples`` with NaN where a resample drew no graph comparing the model: its score there would
    come from regularisation or the ranker's default alone, not from the data, and would narrow or
    shift its interval; such a resample counts as undefined for that model (``n_undefined``)."""
    present = (np.asarray(weights, dtype=np.float64) @ stack.observed.any(axis=2).astype(np.float64)) > 0
    if present.all():
        return samples
    return np.where(present, samples, np.nan)


def refit_samples(stack: GraphStack, ranker: str, weights: np.ndarray, params: dict) -> tuple:
    """The slow way: one ``rank`` of the stack per resample, graph t repeated ``weights[b, t]`` times;
    (B, n) scores, (B, n) ranks by each refit's own rank rule, resamples regularised, unconverged."""
    rows, rank_rows, n_reg, n_unconv = [], [], 0, 0
    for b in range(weights.shape[0]):
        idx = np.repeat(np.arange(stack.T), weights[b])
        res = rank(stack.subset(idx), ranker, **params)
        rows.append(res.scores.reindex(list(stack.models)).to_numpy(np.float64))
        rank_rows.append(res.ranks.reindex(list(stack.models)).to_numpy(np.int64))
        n_reg += float(res.details.get("alpha", 0.0) or 0.0) > 0
        n_unconv += res.details.get("converged", True) is False
    return np.vstack(rows), np.vstack(rank_rows), n_reg, n_unconv


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
        extra = (
            " (single votes are resampled only by the count rankers: bt, davidson, elo, winrate, copeland, "
            "scorewin, rank-centrality, majority)"
            if unit == "vote"
            else ""
        )
        raise LensError(f"Unknown bootstrap unit {unit!r}; choose graph or prompt{extra}.")
    obj = ranker_object(ranker)
    params = obj.check(params)
    rng = np.random.default_rng(seed)
    ranks = None
    if unit == "graph" and obj.pools_identical_graphs(params):
        weights = pattern_weights(stack, B, rng)
    else:
        weights = graph_weights(stack, B, rng, unit)
    out = obj.batched_bootstrap(stack, weights, params)
    if out is not None:
        samples, n_reg, n_unconv, how = out
        method = f"batched: multinomial graph weights, {how}"
    else:
        samples, ranks, n_reg, n_unconv = refit_samples(stack, ranker, weights, params)
        method = "one refit per resample"
    samples = absent_as_undefined(np.asarray(samples, dtype=np.float64), stack, weights)
    if ranks is None:
        ranks = ranks_from_scores_batch(samples)
    return BootstrapResult(
        ranker, stack.models, int(B), int(seed), float(level), samples, ranks, method,
        int(n_reg), int(n_unconv), unit, int(np.isnan(samples).any(axis=1).sum()),
    )


def pattern_counts(vc: VerdictCounts) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Distinct graph patterns as sparse W~ rows (P, n*n) and their multiplicities (P,)."""
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start

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
    from scipy import sparse

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


def _column_quantile(x: np.ndarray, q: float, method: Literal["linear", "lower", "higher"]) -> np.ndarray:
    """``np.nanquantile(x, q, axis=0, method=method)`` of a 2-D array whose every column has a value, for
    all columns at once: nanquantile reduces a 2-D array with NaNs column by column in Python (~2 ms per
    quantile of 200 × 70, most of a kept board's intervals on a sparse set, whose models are missing from
    some resamples). Numpy's rule, per column of n values sorted: ``lower`` / ``higher`` take the value at
    floor / ceil((n - 1)·q); ``linear`` (Hyndman and Fan's type 7) interpolates between the values at
    i = floor(v) and i + 1, v = (n - 1)·q, by g = v - i as a + (b - a)·g, or b - (b - a)·(1 - g) when
    g ≥ 0.5 (at v = n - 1, q = 1, the last value). The same numbers as nanquantile's
    (tests/test_fit_sums_exact.py compares them column by column) but for the sign of a zero taken from a
    column holding -0.0, which may come out +0.0 (a score is never -0.0: scores are centred)."""
    x = np.asarray(x, dtype=np.float64)
    cols = np.arange(x.shape[1])
    ranked = np.sort(x, axis=0)  # a column's NaNs last
    n = (~np.isnan(x)).sum(axis=0)
    v = (n - 1) * q
    if method == "lower":
        return ranked[np.floor(v).astype(np.intp), cols]
    if method == "higher":
        return ranked[np.ceil(v).astype(np.intp), cols]
    below = np.floor(v)
    last = v >= n - 1
    at = np.where(last, n - 1, below).astype(np.intp)
    a = ranked[at, cols]
    b = ranked[np.where(last, n - 1, below + 1).astype(np.intp), cols]
    g = v - below  # where v is the last place (q = 1), b = a: the weight does not matter
    diff = b - a
    out = a + diff * g
    upper = g >= 0.5
    out[upper] = (b - diff * (1 - g))[upper]
    return out


def _over_defined_columns(reduce: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                          defined: np.ndarray) -> np.ndarray:
    """``reduce`` (a NaN-skipping reduction over axis 0) of the columns of ``x`` with a defined value; NaN
    for a column with none (a model undefined in every resample). Each column is reduced on its own, so the
    values are those of ``reduce(x)``; only numpy's all-NaN warning is never raised, so no warning filter is
    changed: ``warnings.catch_warnings`` swaps the process's one filter list, and in a background thread
    (the app's bootstrap jobs) it undid the filters another thread had set meanwhile."""
    out = np.full(x.shape[1], np.nan)
    some = defined > 0
    if some.any():
        out[some] = reduce(x[:, some])
    return out
