"""Bootstrap intervals from vote counts: resample units (graphs, prompts or single votes) as
multinomial weights on a sparse unit-by-cell count matrix, and fit every resample in one batch.

A cell is one (pair, outcome) of a vote (``Votes.cells``: at most 3 n(n-1)/2 of them). Units with
identical rows (the same cells with the same counts, as a million one-battle prompts mostly are) are
pooled into patterns first: drawing U units with replacement and summing their rows has the same
law as a multinomial over the P distinct patterns with probabilities multiplicity / U, so each
resample costs O(P) draws and a sparse (b, P) @ (P, cells) product, never a (B, U) array. Row
identity is tested on two independent 64-bit random projections of the row (exact up to a chance
of about P^2 / 2^128).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from engine.errors import LensError
from engine.rankers.base import ranks_from_scores_batch
from engine.rankers.objects import ranker_object
from engine.rankers.votes import Votes, _all_distinct
from engine.ranking.bootstrap import BootstrapResult, _check

COUNT_UNITS = ("graph", "prompt", "vote")
CHUNK_CELLS = 20_000_000
"""At most this many multinomial counts are held at once (B is processed in chunks)."""


def unit_patterns(votes: Votes, unit: str) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Distinct unit rows as a sparse (P, cells) count matrix and their multiplicities (P,)."""
    n_cells = 3 * votes.n * votes.n
    cells = votes.cells()
    if unit == "vote":
        key = None
    elif unit in ("graph", "prompt"):
        key = votes.graph if unit == "graph" else votes.prompt
    else:
        raise LensError(f"Unknown bootstrap unit {unit!r}; choose one of {', '.join(COUNT_UNITS)}.")
    if key is None or _all_distinct(key):  # one vote per unit: the patterns are the cells
        uniq, mult = np.unique(cells, return_counts=True)
        mat = sparse.csr_matrix(
            (np.ones(uniq.size), (np.arange(uniq.size), uniq)), shape=(uniq.size, n_cells)
        )
        return mat, mult
    _, unit_of = np.unique(key, return_inverse=True)
    unit_of = unit_of.ravel()
    U = int(unit_of.max()) + 1
    units = sparse.csr_matrix((np.ones(cells.size), (unit_of, cells)), shape=(U, n_cells))
    units.sum_duplicates()
    rng = np.random.default_rng(0x5EED)
    r1 = rng.integers(0, 2**63, n_cells, dtype=np.uint64) | np.uint64(1)
    r2 = rng.integers(0, 2**63, n_cells, dtype=np.uint64) | np.uint64(1)
    cnt = units.data.astype(np.uint64)
    starts = units.indptr[:-1]
    with np.errstate(over="ignore"):
        h1 = np.add.reduceat(r1[units.indices] * cnt, starts)
        h2 = np.add.reduceat(r2[units.indices] * cnt, starts)
    _, first, mult = np.unique(np.stack([h1, h2], axis=1), axis=0, return_index=True, return_counts=True)
    return units[first], mult


def resampled_counts(votes: Votes, unit: str, B: int, rng: np.random.Generator):
    """Yield (b, n, n) W and T of successive chunks of the B resamples."""
    mat, mult = unit_patterns(votes, unit)
    U, n = int(mult.sum()), votes.n
    p = mult / U
    step = max(1, CHUNK_CELLS // max(1, mult.size))
    matT = mat.T.tocsr()
    for s in range(0, B, step):
        b = min(step, B - s)
        draws = rng.multinomial(U, p, size=b).astype(np.float64)  # (b, P)
        c = np.asarray((matT @ draws.T).T)  # (b, cells)
        c = c.reshape(b, n, n, 3)
        W = c[..., 2] + c[..., 0].swapaxes(1, 2)
        T = c[..., 1] + c[..., 1].swapaxes(1, 2)
        yield W, T


def _refits(votes: Votes, obj, unit: str, B: int, rng: np.random.Generator, names, params: dict):
    """One refit per resample for rankers without a batched form (Elo: order matters): each vote is
    repeated as often as its unit was drawn, in the votes' order."""
    from dataclasses import replace

    if unit == "vote":
        unit_of, U = np.arange(len(votes)), len(votes)
    else:
        _, unit_of = np.unique(votes.graph if unit == "graph" else votes.prompt, return_inverse=True)
        unit_of = unit_of.ravel()
        U = int(unit_of.max()) + 1
    rows, n_reg, n_unconv = [], 0, 0
    for _ in range(B):
        c = rng.multinomial(U, np.full(U, 1.0 / U))[unit_of]
        idx = np.repeat(np.arange(len(votes)), c)
        sub = replace(
            votes,
            lo=votes.lo[idx],
            hi=votes.hi[idx],
            outcome=votes.outcome[idx],
            graph=votes.graph[idx],
            prompt=votes.prompt[idx],
            row=votes.row[idx],
            p_lo=None if votes.p_lo is None else votes.p_lo[idx],
        )
        pc = sub.pair_counts()
        res = obj.fit_counts(pc, sub, **params)
        rows.append(res.scores.reindex(list(names)).to_numpy(np.float64))
        n_reg += float(res.details.get("alpha", 0.0) or 0.0) > 0
        n_unconv += res.details.get("converged", True) is False
    return np.vstack(rows), n_reg, n_unconv


def bootstrap_counts(
    votes: Votes,
    ranker: str = "bt",
    B: int = 100,
    seed: int = 0,
    *,
    level: float = 0.95,
    unit: str | None = None,
    models: tuple[str, ...] | None = None,
    **params,
) -> BootstrapResult:
    """Percentile bootstrap of a count ranker over B resamples of graphs, prompts or votes."""
    _check(B, level)
    obj = ranker_object(ranker)
    params = obj.check(params)
    unit = obj.default_unit(params) if unit is None else unit
    if unit not in COUNT_UNITS:
        raise LensError(f"Unknown bootstrap unit {unit!r}; choose one of {', '.join(COUNT_UNITS)}.")
    if len(votes) == 0:
        raise LensError("There is no vote to resample in this selection.")
    rng = np.random.default_rng(seed)
    keep = None
    if models is not None:  # the board's models (compared ones) in the votes' model order
        pos = {m: i for i, m in enumerate(votes.models)}
        keep = np.array([pos[m] for m in models])
    names = tuple(votes.models) if models is None else tuple(models)
    if obj.has_batch(params):
        rows, n_reg, n_unconv, how = [], 0, 0, ""
        for W, T in resampled_counts(votes, unit, int(B), rng):
            if keep is not None:
                W, T = W[:, keep][:, :, keep], T[:, keep][:, :, keep]
            out = obj.fit_counts_batch(W, T, **params)
            if out is None:  # has_batch said it batches: a ranker object that contradicts itself
                raise RuntimeError(f"The {ranker} ranker has a batched fit for {params} but returned none.")
            s, r, u, how = out
            drawn = ((W + W.swapaxes(1, 2) + T) > 0).any(axis=2)  # no drawn vote on a model: undefined there
            rows.append(np.where(drawn, np.asarray(s, dtype=np.float64), np.nan))
            n_reg, n_unconv = n_reg + r, n_unconv + u
        samples = np.vstack(rows)
        method = f"batched: multinomial {unit} weights on a sparse {unit}-by-cell count matrix, {how}"
    else:
        samples, n_reg, n_unconv = _refits(votes, obj, unit, int(B), rng, names, params)
        method = "one refit per resample"
    ranks = ranks_from_scores_batch(samples)
    return BootstrapResult(ranker, names, int(B), int(seed), float(level), samples, ranks, method, int(n_reg),
                           int(n_unconv), unit, int(np.isnan(samples).any(axis=1).sum()))
