"""One object per ranker: its parameters, its fits (on pair counts or on graphs), its batched fit for
the bootstrap, its rank rule, its default resampling unit and the notes printed under its table.

``RANKER_OBJECTS[name]`` is what the leaderboard, the bootstrap and the protocols dispatch through.
Count rankers (bt, davidson, elo, winrate, copeland, scorewin, rank-centrality, majority) fit from
``PairCounts`` (W wins and T ties per pair, in votes) that DuckDB aggregates; they never need a
(T, n, n) graph stack. Graph rankers (pged, elspr, kemeny, borda, pairwise-majority) need the
graphs and fit on a GraphStack. The stack entry points in the ranker modules stay for the app's
slider and the protocols; on the same W and T both paths call the same kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import LensError
from engine.graphs.stack import GraphStack, check_dense_size
from engine.rankers.base import RANKER_HELP, RANKERS, ModelScores, RankResult, series, single_thread_blas
from engine.rankers.bt import DEFAULT_ALPHA, fit_bt_batch_info, fit_bt_pairs
from engine.rankers.davidson import fit_davidson_pairs, fit_davidson_stack_batch
from engine.rankers.elo import elo_ratings, elo_ratings_resampled
from engine.rankers.elo_scale import ELO_FACTOR, from_elo_scale, to_elo_scale
from engine.rankers.graph_batch import (
    BatchFit,
    borda_batch,
    elspr_batch,
    half_tie_sums,
    kemeny_batch,
    pairwise_majority_batch,
    pged_batch,
    weighted_sums,
)
from engine.rankers.majority import graph_from_counts, majority_pair_edges, majority_pairs, majority_scores
from engine.rankers.params import ELO_ORDERS as ELO_ORDERS  # re-exported: leaderboard reads it here
from engine.rankers.params import ORDER_WORDS, check_ranker_params
from engine.rankers.pged import check_pged_size
from engine.rankers.rank_centrality import rank_centrality_batch, rank_centrality_pairs
from engine.rankers.simple import (
    UNCOMPARED,
    adjacency_of_pairs,
    copeland_pairs,
    copeland_scores,
    majority_edges,
    winrate_pairs,
    winrate_scores,
)
from engine.rankers.votes import PairCounts, Votes
from engine.rankers.win_probability import bt_win_probabilities, davidson_win_shares, elo_expected_scores

SHOWN_GRAPH_MODELS_MAX = 2_000
"""Copeland's and majority's count fits attach their graph (an (n, n) frame, for display) up to this many
models; above, the result has no ``graph`` extra (it would be O(n^2): 100 MB at 10,000 models)."""

PairBatch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(lo, hi, wins of lo, wins of hi, ties): pair codes (m,) and (b, m) counts of b resamples."""


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def check_counts(pc: PairCounts, ranker: str) -> None:
    """Refuse to rank nothing: fewer than two models or no compared pair."""
    if pc.n < 2:
        raise LensError(f"The {ranker} ranker needs at least two models, but the selection has {pc.n}.")
    if pc.n_pairs == 0:
        raise LensError(f"The {ranker} ranker got no compared pair: the selection holds no valid verdict.")


@dataclass(frozen=True)
class Ranker:
    """Everything about one ranker; subclasses override the fits they have."""

    name: str
    counts: bool = False
    """True: fitted from pair counts (no graphs needed)."""
    sequential: bool = False
    """True: fits the votes one by one in a stated order (Elo), so it needs the votes themselves, not their
    counts, and has no batched fit."""
    counting: bool = False
    """True: the score counts pairs or points won, so pairs never compared add nothing (the board says how
    many there were)."""
    prompt_unit_words: str = ""
    """Said after "bootstrap: resampled prompts" when prompts are this ranker's own unit (per-prompt PGED)."""
    logistic: bool = False
    """True: P(i beats j) = sigmoid(score_i - score_j) on its log scale (Bradley-Terry), so sandwich
    intervals and the style-controlled fit (``engine.rankers.style_bt``) apply."""
    judged_verdicts: bool = False
    """True: the ranker models every verdict with its judge and presentation order (the judge panel), so
    the leaderboard fits it on verdict counts (``engine.ranking.panel_board``), with intervals from the
    fit itself: no keep-K, no bootstrap, no pooling of judges to warn about."""
    notes_read_table: bool = False
    """True: ``notes`` reads the board's table (the participation warning of sums over prompts), so the
    board passes its DataFrame; else it passes None and a board built as arrays stays without pandas."""
    elo_factor: float | None = None
    """Multiplier from this ranker's score to the Elo-like display scale (400·log10 units); None: the score
    has no such reading. BT and Davidson scores are natural-log strengths (400/ln 10 per unit), Elo ratings
    already are 400·log10 units."""

    def from_log(self, theta: np.ndarray, params: dict) -> np.ndarray:
        """Natural-log strengths as this ranker's score under ``params`` (a logistic ranker only)."""
        raise ValueError(f"the {self.name} ranker has no log-strength scale")

    def to_log(self, scores: np.ndarray, params: dict) -> np.ndarray:
        """The inverse of ``from_log``: this ranker's scores as natural-log strengths (up to a constant)."""
        raise ValueError(f"the {self.name} ranker has no log-strength scale")

    @property
    def help(self) -> str:
        """The ranker's one-line description, as the CLI and app list it."""
        return RANKER_HELP[self.name]

    def check(self, params: dict) -> dict:
        """Typed, range-checked parameters (``engine.rankers.params``)."""
        return check_ranker_params(self.name, dict(params))

    def check_size(self, n_models: int, keys, params: dict) -> None:
        """Refuse, in one sentence and before allocating, a selection this ranker's cost cannot bear:
        ``n_models`` models and the graph ``keys`` (one row per graph). Graph rankers first need the
        dense stack (``engine.graphs.stack.check_dense_size``); count rankers have no limit here."""
        if not self.counts:
            check_dense_size(len(keys), n_models, f"The {self.name} ranker")

    def default_unit(self, params: dict) -> str:
        """What the bootstrap resamples unless told: graphs."""
        return "graph"

    def vote_order(self, params: dict, has_time: Callable[[], bool]) -> tuple[str, str] | None:
        """The order the votes are read in and its words for the board, or None when the order does not
        matter (every ranker but a sequential one). ``has_time()`` says whether any verdict has a
        timestamp."""
        return None

    def fit_counts(self, pc: PairCounts, votes: Votes | None = None, *args: Any, **params: Any) -> RankResult:
        """The fit on pair counts (and ordered votes); a graph-only ranker refuses with one sentence.

        Each ranker takes its own keyword parameters (``engine.rankers.params``); the open ``*args: Any,
        **params: Any`` tail is how the type checker is told so: an override may name its parameters."""
        raise LensError(f"The {self.name} ranker needs the tournament graphs, not pair counts.")

    def fit_counts_warm(self, pc: PairCounts, start: RankResult, *args: Any, **params: Any) -> RankResult:
        """``fit_counts`` of resampled counts started from ``start``, the fit of the full counts over the
        same models (the bootstrap's resamples lie near it, so an iterative solver needs fewer steps).
        The answer is the same fit to the solver's tolerance; a ranker without a warm start refits."""
        return self.fit_counts(pc, None, **params)

    def has_batch(self, params: dict) -> bool:
        """Whether ``fit_counts_batch`` fits all bootstrap resamples at once for these parameters."""
        return self.counts and not self.sequential

    def fit_counts_batch(self, W: np.ndarray, T: np.ndarray, *args: Any, **params: Any) -> BatchFit | None:
        """(B, n) scores, regularised, unconverged, how: from (B, n, n) resampled W and T; None: no batch.
        The parameters are the ranker's own, as for ``fit_counts``."""
        return None

    def fit_votes_resampled(self, votes: Votes, repeats: Callable, B: int, *args: Any,
                            **params: Any) -> tuple[np.ndarray, str] | None:
        """((B, n) scores in ``votes.models`` order, how) of B resamples of ordered votes, resample b
        reading vote v ``repeats(v0, v1)[b, v - v0]`` times in a row: the batched form of a sequential
        ranker's one refit per resample (``fit_counts`` on each resample's votes); None: no such form."""
        return None

    def has_pair_batch(self, params: dict) -> bool:
        """Whether ``fit_pairs_batch`` fits every resample from its per-pair counts for these parameters."""
        return False

    def fit_pairs_batch(self, n: int, pairs: PairBatch, *args: Any, **params: Any) -> BatchFit | None:
        """(b, n) scores, regularised, unconverged, how: every resample's fit from its per-pair counts
        (``PairBatch``), never an (n, n) array; None: this ranker has no pair-list batch (the bootstrap
        then uses the dense batch or one fit per resample)."""
        return None

    def pools_identical_graphs(self, params: dict) -> bool:
        """Whether the graph bootstrap may draw one count per distinct graph pattern instead of per graph
        (the statistic depends only on the multiset of graphs, not on their keys)."""
        return False

    def batched_bootstrap(self, stack: GraphStack, weights: np.ndarray, params: dict) -> BatchFit | None:
        """All B resamples of a graph stack at once from the draw counts ``weights`` (B, T): (B, n) scores,
        resamples regularised, resamples unconverged, how (words); None when this ranker has no batched form
        for these parameters (the bootstrap then refits once per resample). A count ranker fits its batched
        count fit on the resampled W and T (one product each)."""
        if not self.has_batch(params):
            return None
        out = self.fit_counts_batch(
            weighted_sums(weights, stack.wins), weighted_sums(weights, stack.ties), **params
        )
        if out is None:
            return None
        scores, n_reg, n_unconv, how = out
        return scores, n_reg, n_unconv, f"W and T of every resample in one product, {how}"

    def notes(self, details: dict, params: dict, table=None) -> list[str]:
        """Sentences a reader of this ranker's table should know (fit details beyond the shared ones)."""
        return []

    def win_probabilities(
        self, scores: np.ndarray, details: dict, params: dict
    ) -> tuple[np.ndarray, str] | None:
        """((n, n) the share of the row model's battles against the column model that the fit expects it
        to win, ties counted half, NaN on the diagonal; what that is, in words) from the fit's ``scores``
        in model order (and its ``details`` and ``params``), by ``engine.rankers.win_probability``; None
        when the score models no outcome (a count, a rank, a vote share)."""
        return None


def _log_start(start: RankResult, models: tuple[str, ...], scale: str) -> np.ndarray:
    """A BT-type fit's scores as log strengths in ``models`` order (a warm start for a refit)."""
    scores = start.scores.reindex(list(models)).to_numpy(np.float64)
    return from_elo_scale(scores) if scale == "elo" else scores


def participation_note(name: str, table, what: str, fix: str) -> list[str]:
    """A warning when a ranker's scores are sums over prompts and models took part in different numbers
    of prompts (a model that played more would rank higher for that alone)."""
    if table is None or "n_prompts" not in getattr(table, "columns", ()) or len(table) == 0:
        return []
    took = table["n_prompts"].astype("float64")
    if took.isna().all() or took.min() == took.max():
        return []
    return [
        f"{name}: {what} are sums over prompts, and the models took part in different numbers of prompts "
        f"({int(took.min())} to {int(took.max())}): a model that played more collects more for that alone; "
        f"{fix}."
    ]


class BT(Ranker):
    """Half-tie Bradley-Terry, fitted from pair counts (hard, or soft from judge probabilities)."""

    def win_probabilities(self, scores, details, params):
        """sigma(theta_i - theta_j) of the log strengths (read back from the Elo-like scale when asked)."""
        theta = from_elo_scale(scores) if params.get("scale") == "elo" else scores
        return bt_win_probabilities(theta), "sigma(theta_i - theta_j) of the fitted Bradley-Terry strengths"

    def fit_counts(self, pc, votes=None, *, solver="newton", alpha=DEFAULT_ALPHA, on_degenerate="regularize",
                   scale="log", soft=False):
        """Bradley-Terry on W + T/2 (``soft``: probability-weighted wins), regularised where no MLE exists."""
        check_counts(pc, "bt")
        if soft:
            if pc.soft is None:
                raise LensError(
                    "Soft Bradley-Terry needs judge probabilities (a prob_a column), and this selection "
                    "has none."
                )
            res = fit_bt_pairs(pc.n, pc.soft_pairs(), pc.models, solver=solver, alpha=alpha,
                               on_degenerate=on_degenerate, scale=scale)
            details = {
                **res.details,
                "model": "soft Bradley-Terry (wins weighted by the judge's probability, paper 001)",
                "pairs_without_probability": pc.soft[2],
            }
            return RankResult(res.ranker, res.model_scores, details, dict(res.extras))
        return fit_bt_pairs(pc.n, pc.wtilde_pairs(), pc.models, solver=solver, alpha=alpha,
                            on_degenerate=on_degenerate, scale=scale)

    def fit_counts_warm(self, pc, start, *, solver="newton", alpha=DEFAULT_ALPHA, on_degenerate="regularize",
                        scale="log", soft=False):
        """Hard BT's pair-list Newton fit started from ``start``'s strengths (log scale)."""
        if soft or solver != "newton":
            return self.fit_counts(pc, None, solver=solver, alpha=alpha, on_degenerate=on_degenerate,
                                   scale=scale, soft=soft)
        check_counts(pc, "bt")
        theta0 = _log_start(start, pc.models, scale)
        return fit_bt_pairs(pc.n, pc.wtilde_pairs(), pc.models, solver=solver, alpha=alpha,
                            on_degenerate=on_degenerate, scale=scale, theta0=theta0)

    def from_log(self, theta, params):
        """Natural-log strengths on the fit's ``scale`` (``to_elo_scale`` with ``scale="elo"``, as
        ``fit_bt_pairs`` converts them)."""
        return to_elo_scale(theta) if params.get("scale", "log") == "elo" else theta

    def to_log(self, scores, params):
        """``from_log`` inverted."""
        return from_elo_scale(scores) if params.get("scale", "log") == "elo" else scores

    def has_batch(self, params):
        """Hard BT fits all resamples at once; soft BT (probability-weighted wins) is refitted one by one."""
        return not params.get("soft", False)

    def fit_counts_batch(self, W, T, *, solver="newton", alpha=DEFAULT_ALPHA, on_degenerate="regularize",
                         scale="log", soft=False):
        """Every bootstrap resample's Bradley-Terry fit at once; None for soft (fitted one by one)."""
        if soft:
            return None
        fit = fit_bt_batch_info(W + 0.5 * T, solver=solver, alpha=alpha, on_degenerate=on_degenerate)
        scores = to_elo_scale(fit.scores) if scale == "elo" else fit.scores
        return scores, int(fit.regularised.sum()), int((~fit.converged).sum()), "one batched Newton fit"

    def pools_identical_graphs(self, params):
        """Hard BT reads only W + T/2 of each graph: identical graphs may be drawn as one pattern."""
        return self.has_batch(params)

    def batched_bootstrap(self, stack, weights, params):
        """Resampled W + T/2 in one float32 product (exact), then one batched Newton fit."""
        if not self.has_batch(params):
            return None
        with single_thread_blas():
            wb = half_tie_sums(stack, weights)
            scores, n_reg, n_unconv, _ = self.fit_counts_batch(wb, np.zeros_like(wb), **params)
        return scores, n_reg, n_unconv, "one matrix product, one batched Newton fit"


class Davidson(Ranker):
    """Davidson's tie model, fitted from pair counts."""

    def win_probabilities(self, scores, details, params):
        """P(win) + P(tie) / 2 of the fitted strengths and tie parameter nu."""
        nu = details.get("nu")
        if nu is None or not np.isfinite(nu):
            return None
        theta = from_elo_scale(scores) if params.get("scale") == "elo" else scores
        return davidson_win_shares(theta, float(nu)), (
            f"P(win) + P(tie)/2 of the fitted Davidson strengths with nu = {float(nu):.4g}")

    def fit_counts(self, pc, votes=None, *, alpha=DEFAULT_ALPHA, on_degenerate="regularize", scale="log"):
        """Davidson strengths and nu from the pair counts' W and T."""
        check_counts(pc, "davidson")
        return fit_davidson_pairs(pc, alpha=alpha, on_degenerate=on_degenerate, scale=scale)

    def fit_counts_warm(self, pc, start, *, alpha=DEFAULT_ALPHA, on_degenerate="regularize", scale="log"):
        """Davidson's fit started from ``start``'s strengths and nu (no BT fit first)."""
        check_counts(pc, "davidson")
        theta0 = _log_start(start, pc.models, scale)
        nu0 = float(start.details.get("nu", np.nan))
        if not (np.isfinite(theta0).all() and np.isfinite(nu0) and nu0 > 0):
            return self.fit_counts(pc, None, alpha=alpha, on_degenerate=on_degenerate, scale=scale)
        return fit_davidson_pairs(pc, alpha=alpha, on_degenerate=on_degenerate, scale=scale,
                                  start=(theta0, nu0))

    def has_batch(self, params):
        """Davidson batches on the log and Elo scales."""
        return params.get("scale", "log") in ("log", "elo")

    def fit_counts_batch(self, W, T, *, alpha=DEFAULT_ALPHA, on_degenerate="regularize", scale="log"):
        """Every resample's Davidson fit in one batched Newton solve; None for scales it cannot batch."""
        if scale not in ("log", "elo"):
            return None
        theta, _, conv, bad = fit_davidson_stack_batch(W, T, alpha=alpha, on_degenerate=on_degenerate)
        theta = to_elo_scale(theta) if scale == "elo" else theta
        return theta, int(bad.sum()), int((~conv).sum()), "one batched Newton fit on (theta, log nu)"

    def notes(self, details, params, table=None):
        """The fitted tie parameter nu, and whether it sits at its lower bound."""
        return [
            f"davidson: tie parameter nu = {_fmt(details.get('nu'))}"
            + (" (at its lower bound: no ties in the data)." if details.get("nu_at_lower_bound") else ".")
        ]


class WinRate(Ranker):
    """Share of comparisons won (ties one half), from pair counts."""

    def fit_counts(self, pc, votes=None):
        """Win rates from the pair counts; refuses when a model was never compared."""
        check_counts(pc, "winrate")
        score = winrate_pairs(pc.n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties)[0]
        if np.isnan(score).any():
            missing = [m for m, s in zip(pc.models, score, strict=True) if np.isnan(s)]
            raise LensError(
                f"Win rate is undefined for models never compared in this selection: {', '.join(missing)}."
            )
        return RankResult(
            "winrate",
            series(pc.models, score),
            {"score": "(wins + ties/2) / comparisons", "uncompared_pairs": "not counted (a share)"},
        )

    def fit_counts_batch(self, W, T):
        """Win rates of every resample at once."""
        return winrate_scores(W, T), 0, 0, "W and T of every resample"

    def has_pair_batch(self, params):
        """Win rate sums per compared pair: it has the pair-list batch."""
        return True

    def fit_pairs_batch(self, n, pairs):
        """Win rates of every resample from its pair counts."""
        lo, hi, w_lo, w_hi, ties = pairs
        how = "per-model sums over the compared pairs of every resample"
        return winrate_pairs(n, lo, hi, w_lo, w_hi, ties), 0, 0, how


def _policy(normalize: bool) -> str:
    return UNCOMPARED + ("; normalised: divided by the number of opponents the model was compared with"
                         if normalize else "; not normalised (normalize=true divides by compared opponents)")


class Copeland(Ranker):
    """Copeland (tie value 1/2) and score-of-win (tie value 1) on the strict-win majority graph."""

    def _tie_value(self) -> float:
        return 0.5 if self.name == "copeland" else 1.0

    def fit_counts(self, pc, votes=None, *, normalize=False):
        """Pairs won by majority of votes plus the tie value times exact majorities, from pair counts."""
        from engine.rankers.base import adjacency_frame

        check_counts(pc, self.name)
        score = copeland_pairs(pc.n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties, self._tie_value(),
                               normalize)[0]
        what = ("pairs won by strict-win majority + half the exact majorities (paper 000, A.3)"
                if self.name == "copeland" else
                "out-degree of the strict-win majority graph, exact majorities as two edges (paper 000, A.3)")
        return RankResult(
            self.name,
            series(pc.models, score),
            {"score": what, "uncompared_pairs": _policy(normalize), "normalized": bool(normalize)},
            {"graph": adjacency_frame(pc.models, adjacency_of_pairs(
                pc.n, pc.lo, pc.hi, *majority_edges(pc.wins_lo, pc.wins_hi, pc.ties)))}
            if pc.n <= SHOWN_GRAPH_MODELS_MAX else {},
        )

    def fit_counts_batch(self, W, T, *, normalize=False):
        """Copeland scores of every resample at once."""
        compared = (W + W.swapaxes(1, 2) + T) > 0
        out = copeland_scores(W, compared, self._tie_value(), normalize, strict=False)
        return out, 0, 0, "W of every resample"

    def has_pair_batch(self, params):
        """Copeland reads each compared pair's majority: it has the pair-list batch."""
        return True

    def fit_pairs_batch(self, n, pairs, *, normalize=False):
        """Copeland scores of every resample from its pair counts."""
        lo, hi, w_lo, w_hi, ties = pairs
        out = copeland_pairs(n, lo, hi, w_lo, w_hi, ties, self._tie_value(), normalize, strict=False)
        return out, 0, 0, "majority per compared pair of every resample"


class RankCentrality(Ranker):
    """Rank Centrality's stationary law, from pair counts."""

    def fit_counts(self, pc, votes=None, *, alpha=DEFAULT_ALPHA, on_degenerate="regularize"):
        """Log stationary law of the walk toward winners on W + T/2, regularised when not strongly
        connected."""
        check_counts(pc, "rank-centrality")
        score, bad = rank_centrality_pairs(pc.n, pc.wtilde_pairs(), alpha, on_degenerate)
        details = {
            "score": "log stationary probability, mean-centred",
            "regularisation": (
                f"the comparison digraph is not strongly connected (no unique stationary law); added "
                f"{alpha} virtual tie(s) to every pair"
                if bad[0]
                else "none"
            ),
            "alpha": alpha if bad[0] else 0.0,
        }
        return RankResult("rank-centrality", series(pc.models, score[0]), details)

    def fit_counts_batch(self, W, T, *, alpha=DEFAULT_ALPHA, on_degenerate="regularize"):
        """Every resample's stationary law in one batch."""
        out, bad = rank_centrality_batch(W + 0.5 * T, alpha, on_degenerate)
        return out, int(bad.sum()), 0, "batched transition matrices and stationary laws"


def _count2(W: np.ndarray, T: np.ndarray, ties: str) -> np.ndarray:
    """Doubled eq. 5 edge counts 2 N_ij from wins and ties ("half": a tie is half an edge each way)."""
    if ties == "half":
        return 2.0 * W + T
    if ties == "edge":
        return 2.0 * (W + T)
    raise LensError(f"Unknown tie reading {ties!r} for the integration graph; choose half or edge.")


class Majority(Ranker):
    """Paper 000's eq. 5 majority ranker, from pair counts."""

    def fit_counts(self, pc, votes=None, *, ties="half", exact_half="both", normalize=False):
        """Out-degree of the majority graph built from the pair counts (same result as the graph path)."""
        from engine.rankers.majority import majority_result

        check_counts(pc, "majority")
        score = majority_pairs(pc.n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties, ties_rule=ties,
                               exact_half=exact_half, normalize=normalize)[0]
        g = None
        if pc.n <= SHOWN_GRAPH_MODELS_MAX:
            e_lo, e_hi, _ = majority_pair_edges(pc.wins_lo, pc.wins_hi, pc.ties, ties, exact_half)
            g = adjacency_of_pairs(pc.n, pc.lo, pc.hi, e_lo, e_hi)
        return majority_result(pc.models, score, g, ties=ties, exact_half=exact_half, normalize=normalize)

    def fit_counts_batch(self, W, T, *, ties="half", exact_half="both", normalize=False):
        """Eq. 5 scores of every resample at once."""
        t = W + W.swapaxes(1, 2) + T
        g = graph_from_counts(_count2(W, T, ties), t, exact_half)
        return majority_scores(g, t > 0, normalize, strict=False), 0, 0, "eq. 5 counts of every resample"

    def has_pair_batch(self, params):
        """Eq. 5 reads each compared pair's counts: it has the pair-list batch."""
        return True

    def fit_pairs_batch(self, n, pairs, *, ties="half", exact_half="both", normalize=False):
        """Eq. 5 scores of every resample from its pair counts (``lo < hi`` in the model order)."""
        lo, hi, w_lo, w_hi, t = pairs
        out = majority_pairs(n, lo, hi, w_lo, w_hi, t, ties_rule=ties, exact_half=exact_half,
                             normalize=normalize, strict=False)
        return out, 0, 0, "eq. 5 counts per compared pair of every resample"


class Elo(Ranker):
    """Online Elo over votes in a stated order (``order``: time, input or prompt; ``ELO_ORDERS``)."""

    def win_probabilities(self, scores, details, params):
        """Elo's own expected score 1 / (1 + base^((r_j - r_i) / scale)) of the final ratings."""
        base, scale = float(details.get("base", 10.0)), float(details.get("scale", 400.0))
        return elo_expected_scores(scores, base, scale), (
            f"Elo's expected score 1 / (1 + {base:g}^((r_j - r_i) / {scale:g})) of the final ratings")

    def vote_order(self, params, has_time):
        """``order`` when given, else time when some verdict has a timestamp, else input (source order);
        ``order=time`` without any timestamp reads the source order and says so."""
        order = params.get("order")
        if order is not None and order not in ELO_ORDERS:
            raise LensError(f"Elo order={order!r} is not one of {', '.join(ELO_ORDERS)}.")
        if order in (None, "time") and not has_time():
            words = ORDER_WORDS["input"]
            return "input", words + (
                "; order=time asked, but no verdict has a timestamp" if order == "time" else ""
            )
        order = order or "time"
        return order, ORDER_WORDS[order]

    def fit_counts(
        self, pc, votes=None, *, k=4.0, base=10.0, scale=400.0, init=1000.0, seed=None, order=None
    ):
        """Sequential Elo over the votes in their stated order (or a seeded shuffle); needs the votes, not
        counts."""
        check_counts(pc, "elo")
        if votes is None:
            raise LensError("Elo needs the votes in order, not only their counts.")
        idx = np.arange(len(votes)) if seed is None else np.random.default_rng(seed).permutation(len(votes))
        s = np.where(votes.outcome > 0, 1.0, np.where(votes.outcome == 0, 0.5, 0.0))
        r = elo_ratings(votes.lo[idx], votes.hi[idx], s[idx], pc.n, k=k, base=base, scale=scale, init=init)
        used = votes.order_used
        details = {"k_factor": k, "base": base, "scale": scale, "init": init, "n_updates": int(len(s)),
                   "order": used if seed is None else f"votes shuffled with seed {seed}",
                   "mean_rating": float(r.mean()), "unit": "votes"}
        return RankResult("elo", ModelScores(tuple(pc.models), r - r.mean()), details)

    def fit_votes_resampled(self, votes, repeats, B, *, k=4.0, base=10.0, scale=400.0, init=1000.0, seed=None,
                            order=None):
        """Every resample's Elo in one pass over the votes (``elo_ratings_resampled``), the same numbers as
        ``fit_counts`` on each resample's votes; None with ``seed`` (each resample shuffled its own way)."""
        if seed is not None:
            return None
        s = np.where(votes.outcome > 0, 1.0, np.where(votes.outcome == 0, 0.5, 0.0))
        r = elo_ratings_resampled(votes.lo, votes.hi, s, votes.n, repeats, k=k, base=base, scale=scale,
                                  init=init)
        scores = np.vstack([row - row.mean() for row in r]) if B else np.zeros((0, votes.n))
        return scores, "every resample's votes in one pass in order, the B ratings updated at once"

    def notes(self, details, params, table=None):
        """Elo's constants, update count and order, and why 0 is the average model."""
        return [
            f"elo: K = {_fmt(details.get('k_factor'))}, base {_fmt(details.get('base'))}, scale "
            f"{_fmt(details.get('scale'))}, initial rating {_fmt(details.get('init'))}, "
            f"{details.get('n_updates')} "
            f"updates; order: {details.get('order')}; score = rating - {_fmt(details.get('init'))} (updates "
            "are zero-sum, so 0 is the average model)."
        ]


class Kemeny(Ranker):
    """Kemeny consensus (graph path only)."""

    def batched_bootstrap(self, stack, weights, params):
        """Counts @ per-graph evidence, one subset DP over all resamples (``graph_batch.kemeny_batch``)."""
        return kemeny_batch(stack, weights, **params)

    def notes(self, details, params, table=None):
        """Whether the order is exact and unique, or a heuristic that is not certified optimal."""
        if details.get("exact"):
            extra = (
                f"; {details['co_optimal_orders']} orders are co-optimal: each score is averaged over "
                "them, so models they order differently can share a rank (the order shown is the first "
                "by model name)"
                if (details.get("co_optimal_orders") or 1) > 1
                else "; the optimal order is unique"
            )
            return [f"kemeny: exact (DP over subsets){extra}."]
        return [f"kemeny: heuristic ({details.get('method')}), not certified optimal; neighbours the "
                "evidence does not separate share their average score."]


class PGED(Ranker):
    """PGED's graph ensemble and denoising (graph path only)."""

    def check_size(self, n_models, keys, params):
        """The dense stack's limit, then PGED's own (``engine.rankers.pged.check_pged_size``)."""
        super().check_size(n_models, keys, params)
        check_pged_size(n_models, keys, params.get("mode", "per-prompt"))

    def default_unit(self, params):
        """Resample prompts in per-prompt mode (graphs of one prompt move together), else graphs."""
        return "prompt" if params.get("mode", "per-prompt") == "per-prompt" else "graph"

    def batched_bootstrap(self, stack, weights, params):
        """Algorithm 1 on all ensembles at once, or the per-question batch (``graph_batch.pged_batch``)."""
        return pged_batch(stack, weights, **params)

    def notes(self, details, params, table=None):
        """The mode and aggregation used, co-optimal orders and the participation warning."""
        d = details
        text = f"pged: {d.get('mode')}"
        if "aggregate" in d:
            text += f"; aggregate {d['aggregate']}; within a question: {d.get('prompt_ties')}"
            if (d.get("co_optimal_orders") or 1) > 1:
                text += f"; {d['co_optimal_orders']} co-optimal Kemeny orders"
        text += f"; delta ties: {d.get('delta_ties')}"
        if d.get("n_prompts_with_delta_ties"):
            text += f" ({d['n_prompts_with_delta_ties']} of {d.get('n_prompts')} questions had one)"
        if "fas" in d:
            text += f"; denoising: {d['fas']}"
            if d.get("n_prompts_fas_greedy_fallback") or d.get("fas_greedy_fallback"):
                n_fb = d.get("n_prompts_fas_greedy_fallback") or 1
                text += (f"; {n_fb} ensemble(s) had more models with arcs than the exact limit and used the "
                         "greedy instead")
        return [text + f"; {d.get('n_removed_arcs')} arc(s) removed by denoising (shown graph: "
                f"{d.get('display_graph')})."] + participation_note(
            "pged", table, "descendant counts (weight scores)",
            "compare with bt or winrate, or restrict the selection to prompts every model took part in")


class Borda(Ranker):
    """Weight score / Borda over per-graph rankings (graph path only)."""

    def batched_bootstrap(self, stack, weights, params):
        """Counts @ per-graph points (``graph_batch.borda_batch``)."""
        return borda_batch(stack, weights, **params)

    def notes(self, details, params, table=None):
        """The participation warning unless the scores were normalised."""
        if details.get("normalized"):
            return []
        return participation_note("borda", table, "weight scores",
                                  "normalize=true divides by the points attainable where the model took part")


class ELSPR(Ranker):
    """ELSPR's cleaned Bradley-Terry (graph path only)."""

    def batched_bootstrap(self, stack, weights, params):
        """One batched BT fit on counts @ the fixed cleaned pairs (``graph_batch.elspr_batch``)."""
        return elspr_batch(stack, weights, **params)

    def notes(self, details, params, table=None):
        """How many compared pairs the reconstruction discarded."""
        d = details
        return [
            f"elspr: {d.get('pairs_discarded')} of {d.get('pairs_cleaned', 0) + d.get('pairs_discarded', 0)} "
            "compared pairs discarded by the reconstruction."
        ]


class PairwiseMajority(Ranker):
    """Copeland on the majority of per-graph rankings (graph path only)."""

    def batched_bootstrap(self, stack, weights, params):
        """Counts @ per-graph "ranked above" matrices (``graph_batch.pairwise_majority_batch``)."""
        return pairwise_majority_batch(stack, weights, **params)


class Panel(Ranker):
    """The judge panel (``engine.rankers.panel``): fitted on verdicts with their judges and presentation
    orders by the leaderboard (``engine.ranking.panel_board``), on graph edges without orders here."""

    def notes(self, details, params, table=None):
        """Each judge's reliability and side bias with its 95 % interval."""
        def pct(row, key):
            v, lo, hi = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
            if v is None:
                return "not identified (no verdict records its order)"
            return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else f"{v:.3f}"

        rows = details.get("judges") or []
        text = "; ".join(f"{r['judge']} ({r['verdicts']} verdicts): reliability {pct(r, 'reliability')}, "
                         f"first-shown bias {pct(r, 'side_bias')}" for r in rows)
        conv = "" if details.get("converged", True) else " The fit did not converge."
        return [f"panel: noisy Bradley-Terry, ridge {_fmt(details.get('ridge'))}; per judge, 95 % intervals: "
                f"{text}.{conv}"]


RANKER_OBJECTS: dict[str, Ranker] = {
    "bt": BT("bt", counts=True, elo_factor=ELO_FACTOR, logistic=True),
    "davidson": Davidson("davidson", counts=True, elo_factor=ELO_FACTOR),
    "elo": Elo("elo", counts=True, sequential=True, elo_factor=1.0),
    "winrate": WinRate("winrate", counts=True),
    "copeland": Copeland("copeland", counts=True, counting=True),
    "scorewin": Copeland("scorewin", counts=True, counting=True),
    "rank-centrality": RankCentrality("rank-centrality", counts=True),
    "majority": Majority("majority", counts=True, counting=True),
    "pged": PGED("pged", prompt_unit_words=" (per-prompt PGED's own unit)", notes_read_table=True),
    "kemeny": Kemeny("kemeny"),
    "elspr": ELSPR("elspr"),
    "borda": Borda("borda", counting=True, notes_read_table=True),
    "pairwise-majority": PairwiseMajority("pairwise-majority", counting=True),
    "panel": Panel("panel", judged_verdicts=True),
}
"""Every registered ranker as its object (same names as ``RANKERS``)."""

assert set(RANKER_OBJECTS) == set(RANKERS), "every registered ranker needs its object"


def ranker_object(name: str) -> Ranker:
    """The ranker object of a name; an unknown name is a user error naming the choices."""
    obj = RANKER_OBJECTS.get(name)
    if obj is None:
        raise LensError(f"Unknown ranker {name!r}; choose one of {', '.join(sorted(RANKER_OBJECTS))}.")
    return obj


def fit_counts(name: str, pc: PairCounts, votes: Votes | None = None, **params) -> RankResult:
    """Fit a count ranker from pair counts with checked parameters (one thread of BLAS)."""
    obj = ranker_object(name)
    params = obj.check(params)
    try:
        with single_thread_blas():
            return obj.fit_counts(pc, votes, **params)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise LensError(f"The {name} ranker does not take that parameter ({exc}).") from None
        raise
