"""The resampling protocols of paper 000 (Section 4.1, Appendix A.3) as one parameterised engine.

Each protocol is a *source pool* per category plus a *draw rule*; every draw is a multiset of graphs
whose W and T (paper 000, eq. 3-4) are fitted by a ranker and compared with a reference ranking:

"Every graph" below means the perturbed pool: originals and paraphrases (sampling replicates only
ever enter the ``sample`` protocol).

==============  ===========================================  ==========================================
protocol        pool (per category)                          draw (each of ``resamples`` outer draws)
==============  ===========================================  ==========================================
trunc           the ``keep`` graphs of smallest S_mu          ``draw`` of them without replacement
sample          the same, on originals + sampling replicates  ``draw`` without replacement
notrunc_boot    every graph                                   as many as the pool, with replacement
scorewin        every graph                                   ``scorewin_draw`` without replacement;
                                                              Copeland on the majority graph
random          ``random_pool`` graphs of the category (all    ``random_reps`` subsets of ``random_draw``
                when it has no more; else a fresh random      of the pool without replacement,
                ``random_pool``-subset per outer resample)    distances averaged
single          original prompts only, keep-K with the K      ``single_draw`` without replacement
                that is best (macro) on that reduced pool
==============  ===========================================  ==========================================

When a pool is smaller than what a rule asks for, the rule takes the whole pool and the row says
so (``degenerate`` with a note): e.g. on data without paraphrases the trunc pool of 25 is the
10 originals, and every draw of 20 is the whole pool, so the interval has width zero. A cell
whose pool is *empty* (``sample`` in a category without sampling replicates, ``single`` without
originals, …) is NaN with a note naming it, and the macro row averages the other categories
(``n_categories`` says over how many). Bradley-Terry fits that stop before the solver's
convergence test is met are counted per cell (``bt_nonconverged``) and named in the note.

Truncation scores come from the graphs as judged, over every model; models without a reference
rating are dropped afterwards, for ranking and distances only.

Random numbers (paper 000 uses seed 20260324): every (protocol, category) cell draws from its own
generator seeded by (seed, a stable id of the protocol's name, a stable id of the category), so a
cell's numbers do not depend on which other cells were requested. The keep→draw protocols (trunc,
sample, single) use common random numbers: graph g of a pool (in graph-key order) gets the uniform
``u[r, g]`` in outer resample r, and a draw of m from a kept set takes its m smallest ``u``. The
sensitivity curves (``engine.experiments.curves``) use the same numbers, so their K = 25 point with draw 20 is
the Trunc25→20 cell exactly.

Speed: a draw is a row of weights over its pool's graphs; ``weights @ W~`` gives every W~ of a cell
at once, identical W~ are fitted once, and every Bradley-Terry fit is warm-started from the fit on
the cell's whole kept pool (``engine.rankers.bt``; the solution does not depend on the start).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.graphs.truncation import (
    can_hold_cycle,
    check_weights,
    graph_scores,
    is_original,
    is_sample,
    keep_order,
    key_rank,
)
from engine.rankers.base import single_thread_blas
from engine.ranking.distances import distances_batch

PROTOCOLS: tuple[str, ...] = ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single")
DISTANCES: tuple[str, ...] = ("spearman", "kendall", "footrule", "chebyshev")
DEFAULT_SEED = 20260324
MACRO = "macro"
MAPPINGS_DIR = Path(__file__).resolve().parents[2] / "data" / "mappings"
RANK_RTOL = 1e-9
"""Scores closer than RANK_RTOL·max(1, |score|) are tied (as the leaderboard's ranks): solver
round-off is not an order. Tied models are then ordered by model position."""


@dataclass(frozen=True)
class ProtocolParams:
    """Sizes of every protocol; the defaults are paper 000's (Section 4.1, Appendix A.2-A.3)."""

    keep: int = 25
    draw: int = 20
    scorewin_draw: int = 40
    random_draw: int = 20
    random_reps: int = 10
    random_pool: int = 50
    """Graphs of a category Random draws its subsets from (paper 000: the 50-graph category pool)."""
    single_draw: int = 20
    resamples: int = 100
    seed: int = DEFAULT_SEED
    mu: float = 1.0
    lam3: float = 1.0
    lam4: float | None = None
    copeland_tie: float = 1.0
    """Copeland credit for an exact majority (a bidirectional edge): 1 = out-degree of the majority graph."""

    def validate(self) -> ProtocolParams:
        for name in ("keep", "draw", "scorewin_draw", "random_draw", "random_reps", "random_pool", "single_draw",
                     "resamples"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise LensError(f"The protocol parameter {name} must be a whole number ≥ 1; got {v!r}.")
        check_seed(self.seed)
        check_weights(self.mu, self.lam3, self.lam4)
        if not np.isfinite(float(self.copeland_tie)):
            raise LensError(f"The score-of-win tie credit must be a finite number; got {self.copeland_tie!r}.")
        return self


def check_seed(seed) -> int:
    """A seed is a whole number ≥ 0 (numpy's seed sequences take no negative entropy)."""
    if int(seed) != seed or seed < 0:
        raise LensError(f"The seed must be a whole number ≥ 0; got {seed!r}.")
    return int(seed)


def label(protocol: str, p: ProtocolParams) -> str:
    """The paper's short name of a protocol cell, with the sizes actually asked for."""
    return {
        "trunc": f"Trunc{p.keep}→{p.draw}",
        "sample": f"Sample{p.keep}→{p.draw}",
        "notrunc_boot": "NoTrunc boot",
        "scorewin": f"ScoreWin{p.scorewin_draw}",
        "random": f"Random{p.random_pool}→{p.random_draw}×{p.random_reps}",
        "single": f"Single→{p.single_draw}",
    }[protocol]


# ----------------------------------------------------------------------------- random numbers


def stable_id(name: str) -> int:
    """A 32-bit id of a name that is the same in every run and on every machine (CRC-32)."""
    return zlib.crc32(str(name).encode("utf-8"))


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """The generator of one cell: seeded by (seed, stable ids of ``names``), independent of the rest."""
    return np.random.default_rng([check_seed(seed), *(stable_id(n) for n in names)])


def keep_draw_uniforms(seed: int, group: str, n_graphs: int, resamples: int) -> np.ndarray:
    """(resamples, n_graphs) uniforms shared by every keep→draw cell of a group (common random numbers).

    Column g belongs to the pool's g-th graph in graph-key order; row r is outer resample r, and a
    longer run extends a shorter one (the first rows are the same).
    """
    return rng_for(seed, "keep-draw", group).random((int(resamples), int(n_graphs)))


def keep_draw_weights(u: np.ndarray, m: int) -> np.ndarray:
    """(R, K) 0/1 weights: in each row the ``m`` entries of ``u`` with the smallest values (all when m ≥ K).

    With ``u`` uniform this is a uniformly random m-subset without replacement of the K columns.
    """
    u = np.atleast_2d(np.asarray(u, dtype=np.float64))
    K = u.shape[1]
    if m >= K:
        return np.ones_like(u)
    thresh = np.partition(u, m - 1, axis=1)[:, m - 1:m]
    return (u <= thresh).astype(np.float64)


def subset_weights(rng: np.random.Generator, pool_size: int, m: int, rows: int) -> np.ndarray:
    """(rows, pool_size) 0/1 weights of ``rows`` independent m-subsets without replacement."""
    m = min(int(m), int(pool_size))
    out = np.zeros((rows, pool_size))
    if pool_size == 0 or rows == 0:
        return out
    picks = np.argsort(rng.random((rows, pool_size)), axis=1)[:, :m]
    np.put_along_axis(out, picks, 1.0, axis=1)
    return out


def random_pool_weights(rng: np.random.Generator, pool_size: int, random_pool: int, m: int, resamples: int,
                        reps: int) -> np.ndarray:
    """(resamples·reps, pool_size) 0/1 weights of the Random protocol: per outer resample, ``reps``
    m-subsets without replacement of a ``random_pool``-graph pool.

    A category with at most ``random_pool`` graphs is that pool (paper 000: its 50-graph category
    pool), and the rows are ``subset_weights``' (same random numbers). A larger category gets a
    fresh uniformly random ``random_pool``-subset in each outer resample, shared by its ``reps`` rows.
    """
    if pool_size <= random_pool:
        return subset_weights(rng, pool_size, m, resamples * reps)
    member = np.repeat(subset_weights(rng, pool_size, random_pool, resamples), reps, axis=0) > 0
    u = np.where(member, rng.random((resamples * reps, pool_size)), 2.0)  # non-members sort last
    m = min(int(m), int(random_pool))
    out = np.zeros((resamples * reps, pool_size))
    np.put_along_axis(out, np.argsort(u, axis=1)[:, :m], 1.0, axis=1)
    return out


def bootstrap_weights(rng: np.random.Generator, pool_size: int, rows: int) -> np.ndarray:
    """(rows, pool_size) multiplicities of ``rows`` draws of pool_size graphs with replacement."""
    if pool_size == 0 or rows == 0:
        return np.zeros((rows, pool_size))
    picks = rng.integers(0, pool_size, size=(rows, pool_size))
    flat = np.bincount((np.arange(rows)[:, None] * pool_size + picks).ravel(), minlength=rows * pool_size)
    return flat.reshape(rows, pool_size).astype(np.float64)


def draw_counts(rng: np.random.Generator, pool: np.ndarray, m: int, reps: int, replace: bool, T: int) -> np.ndarray:
    """(reps, T) multiplicities of ``reps`` draws of ``m`` graphs from positions ``pool``.

    Without replacement ``m`` is capped at the pool size (then every draw is the whole pool).
    Vectorised: argsort of uniform keys gives a uniformly random permutation per row.
    """
    pool = np.asarray(pool, dtype=np.int64)
    P = pool.size
    out = np.zeros((reps, T), dtype=np.float64)
    if P == 0 or reps == 0:
        return out
    if replace:
        picks = pool[rng.integers(0, P, size=(reps, m))]
    else:
        m = min(m, P)
        picks = pool[np.argsort(rng.random((reps, P)), axis=1)[:, :m]]
    rows = np.repeat(np.arange(reps), picks.shape[1])
    np.add.at(out, (rows, picks.ravel()), 1.0)
    return out


# ----------------------------------------------------------------------------- rankers on W~ rows


def ordinal_ranks(scores: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """(B, n) scores → (B, n) ranks 1..n (1 = best); tied scores ordered by model position.

    A deterministic total order, so every distance compares two permutations. Scores closer than
    ``rtol·max(1, |s|)`` count as tied (along the sorted scores, so a chain of near-equal scores is
    one tie group): fits that are tied in exact arithmetic but differ by solver round-off — or by
    the start a warm-started solver came from — get the same ranks.
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    B, n = s.shape
    order = np.argsort(-s, axis=1, kind="stable")
    srt = np.take_along_axis(s, order, axis=1)
    gap = srt[:, :-1] - srt[:, 1:]
    new_group = gap > rtol * np.maximum(1.0, np.abs(srt[:, :-1]))
    gid_sorted = np.zeros((B, n), dtype=np.int64)
    gid_sorted[:, 1:] = np.cumsum(new_group, axis=1)
    gid = np.empty_like(gid_sorted)
    np.put_along_axis(gid, order, gid_sorted, axis=1)
    pos = np.argsort(gid * n + np.arange(n)[None, :], axis=1)
    ranks = np.empty((B, n), dtype=np.int64)
    np.put_along_axis(ranks, pos, np.arange(1, n + 1)[None, :].repeat(B, axis=0), axis=1)
    return ranks


def fractional_ranks(scores: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """(B, n) scores → (B, n) float ranks (1 = best), tied scores sharing their average rank.

    The same tie groups as ``ordinal_ranks`` (scores within ``rtol·max(1, |s|)`` along the sorted
    order), but a group of g models at positions k+1..k+g all get k + (g+1)/2, so the result does
    not depend on model names or positions (as ``engine.ranking.distances`` ranks for ``compare``).
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    B, n = s.shape
    order = np.argsort(-s, axis=1, kind="stable")
    srt = np.take_along_axis(s, order, axis=1)
    starts = np.ones((B, n), dtype=bool)
    starts[:, 1:] = (srt[:, :-1] - srt[:, 1:]) > rtol * np.maximum(1.0, np.abs(srt[:, :-1]))
    ends = np.ones((B, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    pos = np.arange(n)[None, :].repeat(B, axis=0)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)  # group start, per sorted slot
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]  # group end
    ranks = np.empty((B, n), dtype=np.float64)
    np.put_along_axis(ranks, order, 0.5 * (first + last) + 1.0, axis=1)
    return ranks


def copeland_majority_batch(wins: np.ndarray, tie_value: float = 1.0, compared: np.ndarray | None = None) -> np.ndarray:
    """Score-of-win on majority graphs, batched: (B, n, n) strict-win counts → (B, n) scores.

    The majority graph has i → j when i beat j in more graphs than j beat i, and both edges when
    the counts are equal (an exact majority, paper 000 Appendix A.3); the score is the out-degree
    with an exact majority credited ``tie_value`` (1 = plain out-degree as ``rankers`` ``scorewin``,
    0.5 = classic Copeland as ``rankers`` ``copeland``). Pairs never compared (``compared`` False,
    (B, n, n)) have no edge; without ``compared`` every pair counts as compared.
    """
    from engine.rankers.simple import copeland_scores  # the one Copeland kernel (rankers copeland / scorewin)

    w = np.asarray(wins, dtype=np.float64)
    seen = np.ones(w.shape, dtype=bool) if compared is None else np.asarray(compared, dtype=bool)
    return copeland_scores(w, seen, tie_value, normalize=False, strict=False)


def unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row, inverse map): identical draws are fitted once.

    Rows are grouped by a random projection (fast) and the grouping is then checked exactly; if
    two different rows ever shared a projection, nothing is merged.
    """
    counts = np.asarray(counts)
    if counts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    h = counts @ np.random.default_rng(0).random(counts.shape[1])
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.array_equal(counts, counts[first[inverse]]):
        return np.arange(counts.shape[0]), np.arange(counts.shape[0])
    return first, inverse


def bt_scores_info(wt: np.ndarray, theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(B, n, n) half-tie win matrices → ((B, n) BT log-strengths, (B,) converged flags); equal
    matrices are fitted once.

    ``theta0`` (B, n) warm-starts each fit (e.g. from the fit on the cell's whole pool, or from the
    neighbouring K of a curve); the result does not depend on it beyond round-off. A fit whose
    flag is False stopped at the solver's iteration cap (``engine.rankers.bt.newton_batch``).
    """
    from engine.rankers.bt import fit_bt_batch_info

    wt = np.asarray(wt, dtype=np.float64)
    B, n, _ = wt.shape
    if B == 0:
        return np.zeros((0, n)), np.zeros(0, dtype=bool)
    first, inverse = unique_rows(wt.reshape(B, n * n))
    start = None if theta0 is None else np.asarray(theta0, dtype=np.float64)[first]
    fit = fit_bt_batch_info(wt[first], theta0=start)
    return fit.scores[inverse], np.asarray(fit.converged, dtype=bool)[inverse]


def bt_scores(wt: np.ndarray, theta0: np.ndarray | None = None) -> np.ndarray:
    """(B, n, n) half-tie win matrices → (B, n) BT log-strengths (``bt_scores_info`` without the flags)."""
    return bt_scores_info(wt, theta0)[0]


def flat_matrices(stack: GraphStack) -> dict[str, np.ndarray]:
    """Per graph, flattened (T, n²) strict wins, half-tie wins W + T/2 (paper 000, Section 3.2)
    and the compared-pair mask."""
    wins = stack.wins.astype(np.float64)
    ties = stack.ties.astype(np.float64)
    T, n = stack.T, stack.n
    return {"wins": wins.reshape(T, n * n), "wtilde": (wins + 0.5 * ties).reshape(T, n * n),
            "observed": stack.observed.astype(np.float64).reshape(T, n * n)}


def permutation_distances(ranks: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """The four distances of paper 000 (App. C.2) for (B, n) permutation ranks against one (n,) permutation.

    The fast path for ordinal ranks (no ties): equal to ``engine.ranking.distances.distances_batch`` there.
    """
    r = np.atleast_2d(np.asarray(ranks, dtype=np.int64))
    ref = np.asarray(ref_ranks, dtype=np.int64)
    n = r.shape[1]
    if n < 2:
        raise LensError("A ranking distance needs at least two models.")
    d = (r - ref[None, :]).astype(np.float64)
    by_ref = r[:, np.argsort(ref)]  # columns in reference order: discordant pairs are inversions
    inv = np.triu(by_ref[:, :, None] > by_ref[:, None, :], 1).sum(axis=(1, 2))
    return {
        "spearman": 3.0 * (d * d).sum(axis=1) / (n * (n * n - 1)),
        "kendall": 2.0 * inv / (n * (n - 1)),
        "footrule": np.abs(d).sum(axis=1) / np.floor(n * n / 2.0),
        "chebyshev": np.abs(d).max(axis=1) / (n - 1),
    }


def distances_for_scores(scores: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """All four distances of paper 000 (Section 4.1, App. C.2) for (B, n) scores against a reference.

    Tied scores share their average rank (``fractional_ranks``; distances as ``engine.ranking.distances``
    and ``compare`` take them), never an order by model name: rows without a tie take the
    permutation fast path, rows with one ``engine.ranking.distances.distances_batch``.
    """
    ranks = fractional_ranks(scores)
    ref = np.asarray(ref_ranks)
    srt = np.sort(ranks, axis=1)
    tied = (srt[:, 1:] == srt[:, :-1]).any(axis=1)  # a group of 3 shares the whole number k + 2
    if not tied.any():
        return permutation_distances(ranks.astype(np.int64), ref)
    out = {k: np.empty(len(ranks)) for k in DISTANCES}
    for rows, fn in ((~tied, lambda r: permutation_distances(r.astype(np.int64), ref)),
                     (tied, lambda r: distances_batch(r, ref))):
        if rows.any():
            for k, val in fn(ranks[rows]).items():
                out[k][rows] = val
    return out


def summarise(values: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of (cells, R) resample values: mean, ci_low/ci_high (2.5/97.5 %), half_width
    (1.96·sd/√R, the interval of the mean) and sd — vectorised over cells."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    R = v.shape[1]
    sd = v.std(axis=1, ddof=1) if R > 1 else np.zeros(v.shape[0])
    lo, hi = np.quantile(v, [0.025, 0.975], axis=1) if R else (np.full(v.shape[0], np.nan),) * 2
    return {"mean": v.mean(axis=1), "ci_low": lo, "ci_high": hi, "half_width": 1.96 * sd / np.sqrt(max(R, 1)),
            "sd": sd}


# ----------------------------------------------------------------------------- reference


def category_mapping(dataset: str, directory: Path = MAPPINGS_DIR) -> pd.DataFrame:
    """The dataset's category → LMArena category table (``data/mappings/<dataset>.categories.csv``)."""
    path = directory / f"{dataset}.categories.csv"
    if not path.exists():
        raise LensError(f"There is no category mapping for dataset {dataset!r} (expected {path}).")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    need = {"category", "arena_category", "match"}
    if not need.issubset(df.columns):
        raise LensError(f"The category mapping {path} lacks the column(s) {', '.join(sorted(need - set(df.columns)))}.")
    bad = df[~df["match"].isin(["exact", "proxy"])]
    if len(bad):
        raise LensError(f"Row {int(bad.index[0]) + 2} of {path} has match {bad['match'].iloc[0]!r}; use exact or proxy.")
    return df


def reference_ranks(reference: pd.Series, models: tuple[str, ...]) -> np.ndarray:
    """Ranks 1..n (1 = highest reference rating) of ``models`` in their given order."""
    missing = [m for m in models if m not in reference.index]
    if missing:
        raise LensError(f"The reference has no rating for model(s) {', '.join(missing)}.")
    r = reference.reindex(list(models)).to_numpy(dtype=np.float64)
    return ordinal_ranks(r[None, :])[0]


def _reference_for(reference: pd.Series | Mapping[str, pd.Series], category: str | None) -> pd.Series:
    if isinstance(reference, pd.Series):
        return reference
    if category in reference:
        return reference[category]
    raise LensError(f"No reference ranking is given for category {category!r}.")


def common_models(stack: GraphStack, reference: pd.Series | Mapping[str, pd.Series], categories: list[str]) -> tuple[str, ...]:
    """Models of the stack that every needed reference rates (rankings are compared on these)."""
    refs = [reference] if isinstance(reference, pd.Series) else [_reference_for(reference, c) for c in categories]
    keep = [m for m in stack.models if all(m in r.index and np.isfinite(r[m]) for r in refs)]
    if len(keep) < 2:
        raise LensError("Fewer than two of the dataset's models have a reference rating, so no ranking can be compared.")
    return tuple(keep)


# ----------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class _Job:
    """One (protocol, category) cell: ``weights`` (rows, P) over the graphs at stack positions ``cols``."""

    protocol: str
    category: str
    cols: np.ndarray  # (P,) stack positions
    weights: np.ndarray  # (rows, P) multiplicities
    reps: int  # rows averaged per outer resample (random), else 1
    ranker: str
    n_pool: int
    n_keep: int
    n_draw: int
    note: str
    T: int

    @property
    def empty(self) -> bool:
        """No graph to draw from: the cell is NaN and stays out of the macro average."""
        return self.weights.shape[1] == 0 or self.n_keep == 0

    @property
    def counts(self) -> np.ndarray:
        """(rows, T) multiplicities over every graph of the stack."""
        out = np.zeros((self.weights.shape[0], self.T))
        out[:, self.cols] = self.weights
        return out


def _category_positions(stack: GraphStack) -> dict[str, np.ndarray]:
    cats = stack.keys["category"].astype("string").fillna("(none)").to_numpy(dtype=object)
    return {c: np.flatnonzero(cats == c) for c in sorted(set(cats))}


def _kept(pool: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` graphs of ``pool`` in the global (score, key) ``order``."""
    in_pool = np.zeros(order.size, dtype=bool)
    in_pool[pool] = True
    ordered = order[in_pool[order]]
    return np.sort(ordered[: min(k, ordered.size)])


def _by_key(pool: np.ndarray, krank: np.ndarray) -> np.ndarray:
    """Pool positions in graph-key order (the column order of the common random numbers)."""
    pool = np.asarray(pool, dtype=np.int64)
    return pool[np.argsort(krank[pool], kind="stable")]


def keep_draw_job_weights(pool: np.ndarray, kept: np.ndarray, m: int, krank: np.ndarray, seed: int, group: str,
                          resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept positions in key order, (R, kept) 0/1 weights): draws of ``m`` from ``kept`` ⊆ ``pool``
    by the group's common random numbers."""
    pool_k = _by_key(pool, krank)
    kept_k = _by_key(kept, krank)
    u = keep_draw_uniforms(seed, group, pool_k.size, resamples)
    cols = np.searchsorted(krank[pool_k], krank[kept_k])
    return kept_k, keep_draw_weights(u[:, cols], m)


def _note(pool_size: int, keep: int | None, draw: int, replace_: bool) -> tuple[int, int, str]:
    kept = pool_size if keep is None else min(keep, pool_size)
    notes = []
    if keep is not None and keep > pool_size:
        notes.append(f"pool has {pool_size} < keep {keep}")
    n_draw = draw if replace_ else min(draw, kept)
    if not replace_ and draw >= kept:
        notes.append("each draw is the whole kept pool (no resampling spread)")
    return kept, n_draw, "; ".join(notes)


def _is_original(stack: GraphStack) -> np.ndarray:
    return is_original(stack.keys)


def _is_sample(stack: GraphStack) -> np.ndarray:
    return is_sample(stack.keys)


def _fit_jobs(jobs: list[_Job], stack: GraphStack, refs: dict[str, np.ndarray],
              p: ProtocolParams) -> tuple[dict[int, dict[str, np.ndarray]], dict[int, int]]:
    """(distances per outer resample of every job — NaN for an empty job —, BT fits per job that did
    not converge); all BT fits in one warm-started batch."""
    flat = flat_matrices(stack)
    n = stack.n
    scores: dict[int, np.ndarray] = {}
    nonconv = {i: 0 for i in range(len(jobs))}
    bt = [i for i, j in enumerate(jobs) if j.ranker == "bt" and not j.empty]
    if bt:
        wt_rows = [jobs[i].weights @ flat["wtilde"][jobs[i].cols] for i in bt]
        centre = bt_scores(np.stack([flat["wtilde"][jobs[i].cols].sum(axis=0) for i in bt]).reshape(-1, n, n))
        theta0 = np.concatenate([np.repeat(centre[a][None], w.shape[0], axis=0) for a, w in enumerate(wt_rows)])
        all_scores, conv = bt_scores_info(np.concatenate(wt_rows).reshape(-1, n, n), theta0)
        bounds = np.cumsum([0] + [w.shape[0] for w in wt_rows])
        for a, i in enumerate(bt):
            scores[i] = all_scores[bounds[a]:bounds[a + 1]]
            nonconv[i] = int((~conv[bounds[a]:bounds[a + 1]]).sum())
    for i, j in enumerate(jobs):
        if j.ranker not in ("bt", "copeland_majority"):
            raise LensError(f"Unknown protocol ranker {j.ranker!r}; choose bt or copeland_majority.")
        if j.ranker == "copeland_majority" and not j.empty:
            w = (j.weights @ flat["wins"][j.cols]).reshape(-1, n, n)
            seen = (j.weights @ flat["observed"][j.cols]).reshape(-1, n, n) > 0
            scores[i] = copeland_majority_batch(w, p.copeland_tie, seen)
    out: dict[int, dict[str, np.ndarray]] = {}
    for i, j in enumerate(jobs):
        if j.empty:
            out[i] = {k: np.full(j.weights.shape[0] // j.reps, np.nan) for k in DISTANCES}
    for cat in sorted({j.category for j in jobs}):
        mine = [i for i, j in enumerate(jobs) if j.category == cat and not j.empty]
        if not mine:
            continue
        d = distances_for_scores(np.concatenate([scores[i] for i in mine]), refs[cat])
        off = 0
        for i in mine:
            size = scores[i].shape[0]
            out[i] = {k: v[off:off + size].reshape(-1, jobs[i].reps).mean(axis=1) for k, v in d.items()}
            off += size
    return out, nonconv


def point_distances(stack: GraphStack, groups: list[tuple[str, np.ndarray]], refs: dict[str, np.ndarray], ranker: str = "bt") -> list[dict[str, float]]:
    """Distances of single fits, one per (category, kept positions) group, in one batch; each
    dict also says whether its fit ``converged``."""
    if ranker != "bt":
        raise LensError(f"Point fits use the bt ranker; got {ranker!r}.")
    flat = flat_matrices(stack)["wtilde"]
    wt = np.stack([flat[pos].sum(axis=0) for _, pos in groups]).reshape(-1, stack.n, stack.n)
    scores, conv = bt_scores_info(wt)
    res: list[dict[str, float]] = [{} for _ in groups]
    for cat in sorted({c for c, _ in groups}):
        rows = [r for r, (c, _) in enumerate(groups) if c == cat]
        d = distances_for_scores(scores[rows], refs[cat])
        for a, r in enumerate(rows):
            res[r] = {**{k: float(v[a]) for k, v in d.items()}, "converged": bool(conv[r])}
    return res


def graph_order(stack: GraphStack, p: ProtocolParams) -> np.ndarray:
    """Keep order (by S and graph key) of every graph, scored on the graphs as judged (all models)."""
    return keep_order(_scores(stack, p), stack.keys)


def best_single_k(stack: GraphStack, refs: dict[str, np.ndarray], p: ProtocolParams, distance: str = "spearman",
                  order: np.ndarray | None = None) -> tuple[int, pd.DataFrame]:
    """The single-prompt baseline's K: the global keep-K (K per category, capped at the category's
    original-prompt pool) with the smallest macro-averaged distance; ties → the smaller K.

    ``order``: the keep order from the unrestricted stack (default: scored on ``stack`` itself)."""
    cats = _category_positions(stack)
    orig = _is_original(stack)
    order = graph_order(stack, p) if order is None else order
    pools = {c: pos[orig[pos]] for c, pos in cats.items()}
    kmax = max(int(v.size) for v in pools.values())
    if kmax == 0:
        raise LensError("The single-prompt baseline needs original-prompt graphs (variant 0), and there are none.")
    cells = [(k, c) for k in range(1, kmax + 1) for c in cats if pools[c].size]
    d = point_distances(stack, [(c, _kept(pools[c], order, k)) for k, c in cells], refs)
    curve = pd.DataFrame({"k": [k for k, _ in cells], "category": [c for _, c in cells],
                          distance: [x[distance] for x in d], "converged": [x["converged"] for x in d]})
    macro = curve.groupby("k")[distance].mean()
    return int(macro.idxmin()), curve


def _scores(stack: GraphStack, p: ProtocolParams) -> np.ndarray:
    """Each graph's keep-K score as ``engine.graphs.truncation.keep_k_graphs`` scores it (coverage-normalised
    S_mu, reference capacity over the perturbed pool's graphs that can hold a cycle, else over all
    such graphs); the raw S_mu where all graphs compare the same pairs."""
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    counts, capacity = cycle_counts(stack), cycle_capacity(stack)
    holds = can_hold_cycle(capacity)
    among = np.flatnonzero(holds & ~is_sample(stack.keys))
    if among.size == 0:
        among = np.flatnonzero(holds)
    return graph_scores(counts, capacity, mu=p.mu, lam3=p.lam3, lam4=p.lam4, among=among)[0]


def build_jobs(stack: GraphStack, protocols: tuple[str, ...], p: ProtocolParams, single_k: int | None = None,
               order: np.ndarray | None = None) -> list[_Job]:
    """The draws of every (protocol, category) cell as weight matrices over the cell's pool.

    ``order``: keep order of the stack's graphs (default: scored on ``stack``; ``run_protocols``
    passes the order scored before models were dropped). Seeds: see the module docstring.
    """
    cats = _category_positions(stack)
    order = graph_order(stack, p) if order is None else order
    krank = key_rank(stack.keys)
    orig, samp = _is_original(stack), _is_sample(stack)
    T, R = stack.T, p.resamples
    jobs: list[_Job] = []
    for proto in protocols:
        if proto not in PROTOCOLS:
            raise LensError(f"Unknown protocol {proto!r}; choose from {', '.join(PROTOCOLS)}.")
        for cat, allpos in cats.items():
            pos = _by_key(allpos[~samp[allpos]], krank)  # the perturbed pool: originals + paraphrases
            empty = "no original or paraphrased prompts"
            if proto in ("trunc", "sample", "single"):
                if proto == "trunc":
                    pool, k, draw, note0 = pos, p.keep, p.draw, ""
                elif proto == "sample":  # the original prompt's sampling replicates (and the original)
                    has = samp[allpos].any()
                    pool = allpos[orig[allpos] | samp[allpos]] if has else allpos[:0]
                    k, draw, note0, empty = p.keep, p.draw, "", "no sampling replicates"
                else:
                    pool, draw = pos[orig[pos]], p.single_draw
                    k = single_k if single_k is not None else p.keep
                    note0, empty = f"K={k}", "no original prompts"
                kept, m, note = _note(pool.size, k, draw, False)
                cols, w = keep_draw_job_weights(pool, _kept(pool, order, k), m, krank, p.seed, cat, R)
                note = "; ".join(x for x in (note0, note) if x)
                jobs.append(_Job(proto, cat, cols, w, 1, "bt", pool.size, kept, m, note, T))
            elif proto == "notrunc_boot":
                w = bootstrap_weights(rng_for(p.seed, proto, cat), pos.size, R)
                jobs.append(_Job(proto, cat, pos, w, 1, "bt", pos.size, pos.size, pos.size, "", T))
            elif proto == "scorewin":
                kept, m, note = _note(pos.size, None, p.scorewin_draw, False)
                w = subset_weights(rng_for(p.seed, proto, cat), pos.size, p.scorewin_draw, R)
                jobs.append(_Job(proto, cat, pos, w, 1, "copeland_majority", pos.size, kept, m, note, T))
            else:  # random
                kept, m, note = _note(min(pos.size, p.random_pool), None, p.random_draw, False)
                w = random_pool_weights(rng_for(p.seed, proto, cat), pos.size, p.random_pool, p.random_draw,
                                        R, p.random_reps)
                if 0 < pos.size < p.random_pool:
                    note = "; ".join(x for x in (f"category pool has {pos.size} < {p.random_pool} graphs", note) if x)
                elif pos.size > p.random_pool:
                    note = "; ".join(x for x in (f"a random {p.random_pool} of {pos.size} graphs per resample", note)
                                     if x)
                jobs.append(_Job(proto, cat, pos, w, p.random_reps, "bt", pos.size, kept, m, note, T))
            if jobs[-1].empty:
                jobs[-1] = replace(jobs[-1], note=f"{label(proto, p)} / {cat}: empty pool ({empty}); left out of the macro")
    return jobs


def _summary(values: np.ndarray) -> dict[str, float]:
    return {k: float(v[0]) for k, v in summarise(np.asarray(values)[None, :]).items()}


def _with_nonconverged(note: str, bad: int, fits: int) -> str:
    """``note`` plus, when some Bradley-Terry fits stopped at the iteration cap, how many."""
    if not bad:
        return note
    return "; ".join(x for x in (note, f"{bad} of {fits} Bradley-Terry fits did not converge") if x)


def run_protocols(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    protocols: tuple[str, ...] | list[str] = PROTOCOLS,
    params: ProtocolParams | None = None,
) -> pd.DataFrame:
    """Run the protocols on one judge's graphs; a long Table-2-shaped frame.

    ``reference``: one rating Series by model name, or a mapping category → Series. Truncation
    scores use every model of the graphs; models without a rating in every needed reference are
    then left out of the rankings. One row per (protocol, category, distance) plus a ``macro`` row
    per (protocol, distance) whose resampling distribution is the per-resample mean over
    categories. Columns: protocol, label, category, distance, mean, ci_low, ci_high (2.5/97.5 % of
    the resampling distribution), half_width (1.96·sd/√R, the interval of the mean), sd, n_pool,
    n_keep, n_draw, n_categories (1 / 0 for an empty cell; the macro: categories averaged),
    resamples, degenerate, bt_nonconverged (fits that stopped at the iteration cap), note.
    An empty cell is NaN (degenerate, with a note naming it) and stays out of the macro.
    """
    p = (params or ProtocolParams()).validate()
    protocols = tuple(protocols)
    for proto in protocols:
        if proto not in PROTOCOLS:
            raise LensError(f"Unknown protocol {proto!r}; choose from {', '.join(PROTOCOLS)}.")
    if stack.T == 0:
        raise LensError("There are no graphs to resample.")
    cats = list(_category_positions(stack))
    models = common_models(stack, reference, cats)
    order = graph_order(stack, p)  # the graphs as judged, every model (before any is dropped)
    st = stack.restrict_models(models)
    refs = {c: reference_ranks(_reference_for(reference, c), models) for c in cats}
    with single_thread_blas():  # small matrices: threads only add synchronisation
        single_k, single_curve = best_single_k(st, refs, p, order=order) if "single" in protocols else (None, None)
        jobs = build_jobs(st, protocols, p, single_k, order=order)
        dist, nonconv = _fit_jobs(jobs, st, refs, p)
    blocks = []
    for proto in protocols:
        mine = [i for i, j in enumerate(jobs) if j.protocol == proto]
        js = [jobs[i] for i in mine]
        used = [i for i in mine if not jobs[i].empty]
        left = [jobs[i].category for i in mine if jobs[i].empty]
        fits = [jobs[i].weights.shape[0] if jobs[i].ranker == "bt" and not jobs[i].empty else 0 for i in mine]
        bad = [nonconv[i] for i in mine]
        # Single's K comes from point fits on its pool: those count too (on the macro row)
        k_bad, k_fits = ((int((~single_curve["converged"]).sum()), len(single_curve)) if proto == "single"
                         else (0, 0))
        notes = [_with_nonconverged(j.note, b, f) for j, b, f in zip(js, bad, fits, strict=True)]
        macro_note = (f"macro over {len(used)} of {len(mine)} categories"
                      + (f" (left out, empty pool: {', '.join(left)})" if left else "")
                      + f"; models: {', '.join(models)}")
        for dname in DISTANCES:
            macro = (np.mean([dist[i][dname] for i in used], axis=0) if used
                     else np.full(p.resamples, np.nan))  # per resample: the mean over the non-empty cells
            vals = np.stack([dist[i][dname] for i in mine] + [macro])
            s = summarise(vals)
            block = pd.DataFrame({
                "protocol": proto, "label": label(proto, p), "category": [j.category for j in js] + [MACRO],
                "distance": dname, **s,
                "n_pool": [j.n_pool for j in js] + [sum(j.n_pool for j in js)],
                "n_keep": [j.n_keep for j in js] + [sum(j.n_keep for j in js)],
                "n_draw": [j.n_draw for j in js] + [sum(j.n_draw for j in js)],
                "n_categories": [0 if j.empty else 1 for j in js] + [len(used)],
                "resamples": p.resamples,
                "bt_nonconverged": bad + [sum(bad) + k_bad],
                "note": notes + [_with_nonconverged(macro_note, sum(bad) + k_bad, sum(fits) + k_fits)],
            })
            empty = np.array([j.empty for j in js] + [not used])
            block.insert(block.columns.get_loc("resamples") + 1, "degenerate",
                         empty | ((s["ci_high"] - s["ci_low"]) == 0.0))
            blocks.append(block)
    return pd.concat(blocks, ignore_index=True)


def table2(frame: pd.DataFrame, distance: str = "spearman", scale: float = 1000.0) -> pd.DataFrame:
    """Pivot a ``run_protocols`` frame into paper 000's Table 2 layout: ``mean ± half_width``
    (× ``scale``) by protocol label (rows) and category (columns, macro last); an empty cell is —."""
    f = frame[frame["distance"] == distance]
    cell = f.assign(cell=["—" if not np.isfinite(m) else f"{m * scale:.0f} ± {h * scale:.0f}"
                          for m, h in zip(f["mean"], f["half_width"], strict=True)])
    wide = cell.pivot(index="label", columns="category", values="cell")
    cols = [c for c in wide.columns if c != MACRO] + ([MACRO] if MACRO in wide.columns else [])
    order = list(dict.fromkeys(f["label"]))
    return wide.loc[order, cols]


__all__ = [
    "DEFAULT_SEED", "DISTANCES", "PROTOCOLS", "RANK_RTOL", "ProtocolParams", "best_single_k", "bt_scores",
    "bt_scores_info", "build_jobs", "category_mapping", "copeland_majority_batch", "draw_counts", "keep_draw_uniforms",
    "keep_draw_weights", "fractional_ranks", "ordinal_ranks", "permutation_distances", "random_pool_weights", "reference_ranks", "rng_for", "run_protocols",
    "stable_id", "summarise", "table2",
]
