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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.foreground import checkpoint
from engine.rankers.base import ranks_from_scores_batch
from engine.rankers.bt_solvers import DENSE_MODELS_MAX
from engine.rankers.objects import ranker_object
from engine.rankers.resample_draws import DrawnRows, ResampleRepeats
from engine.rankers.simple import pair_sums
from engine.rankers.votes import PairCounts, Votes
from engine.ranking.bootstrap import BootstrapResult, _check

if TYPE_CHECKING:
    from scipy import sparse

COUNT_UNITS = ("graph", "prompt", "vote")
CHUNK_CELLS = 20_000_000
"""At most this many multinomial counts are held at once (B is processed in chunks)."""


@dataclass(frozen=True)
class CountedBattles:
    """Battles known only by their per-pair counts (a pair-count dataset, migration 074): the bootstrap's
    input where there is no vote to hold. Each battle is one unit, so the only unit is ``vote``: the
    resample is one multinomial over all the battles (N battles drawn with replacement, each cell
    (pair, outcome) with probability count / N), the law of the ``vote`` bootstrap of the battle log
    these counts sum; with the same seed both give the same draws (tests/test_pair_count_data.py)."""

    counts: PairCounts

    @property
    def models(self) -> tuple[str, ...]:
        """The models, in the counts' order."""
        return self.counts.models

    @property
    def n(self) -> int:
        """Number of models."""
        return self.counts.n

    def __len__(self) -> int:
        pc = self.counts
        return int(pc.wins_lo.sum() + pc.wins_hi.sum() + pc.ties.sum())

    def cell_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(cell codes in increasing order, battles in each): the cells of ``Votes.cells`` (outcome +1 lo
        won, 0 tie, -1 hi won) that hold at least one battle."""
        pc = self.counts
        base = (pc.lo.astype(np.int64) * pc.n + pc.hi) * 3
        codes = np.stack([base, base + 1, base + 2], axis=1).ravel()  # hi won, tie, lo won
        mult = np.stack([pc.wins_hi, pc.ties, pc.wins_lo], axis=1).ravel()
        if not np.array_equal(mult, np.round(mult)):
            raise LensError("Pair counts must be whole numbers of battles to be resampled.")
        order = np.argsort(codes, kind="stable")
        codes, mult = codes[order], mult[order].astype(np.int64)
        held = mult > 0
        return codes[held], mult[held]


VoteSource = Votes | CountedBattles
"""What the bootstrap resamples: votes, or the battles of a pair-count dataset."""


SEEDED_CELLS_MAX = 1 << 22
"""Up to this many possible cells (3 n^2: about 1,180 models) the pattern hashes draw one random value
per possible cell, so a seeded bootstrap gives the numbers it gave before the occurring-cells change
(the README's example table); above, one value per occurring cell."""


def unit_patterns(votes: VoteSource, unit: str) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Distinct unit rows as a sparse (P, cells) count matrix and their multiplicities (P,)."""
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start ~0.5 s

    mat, mult, cols = compact_patterns(votes, unit)
    shape = (mat.shape[0], 3 * votes.n ** 2)
    full = sparse.csr_matrix((mat.data, cols[mat.indices], mat.indptr), shape=shape)
    return full, mult


def compact_patterns(votes: VoteSource, unit: str) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
    """``unit_patterns`` over the cells that occur only: (P, C) counts, multiplicities (P,) and the cell
    code of each of the C columns (memory O(votes), never O(n^2) cells; O(pairs) for counted battles)."""
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start ~0.5 s

    if isinstance(votes, CountedBattles):
        if unit != "vote":
            raise LensError(f"Pair counts hold no {unit}s, only battles: the bootstrap resamples battles "
                            "(unit vote).")
        cols, mult = votes.cell_counts()
        eye = sparse.csr_matrix((np.ones(cols.size), (np.arange(cols.size), np.arange(cols.size))),
                                shape=(cols.size, cols.size))
        return eye, mult, cols
    cols, compact = occurring_cells(votes.cells(), 3 * votes.n ** 2)
    n_cells = cols.size
    if unit == "vote":
        key = None
    elif unit in ("graph", "prompt"):
        key = votes.graph if unit == "graph" else votes.prompt
    else:
        raise LensError(f"Unknown bootstrap unit {unit!r}; choose one of {', '.join(COUNT_UNITS)}.")
    if key is None:
        return _cells_as_patterns(compact, cols)
    by_unit = np.argsort(key, kind="stable")
    checkpoint()  # a background bootstrap pauses here too (the sort and the hashing below: ~0.1 s each at 1M)
    sorted_key = key[by_unit]
    starts = np.flatnonzero(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])))
    del sorted_key
    if starts.size == len(votes):
        return _cells_as_patterns(compact, cols)
    rng = np.random.default_rng(0x5EED)
    every = 3 * votes.n ** 2
    if every <= SEEDED_CELLS_MAX:  # one value per possible cell, as before: the same patterns, same draws
        r1 = rng.integers(0, 2**63, every, dtype=np.uint64)[cols] | np.uint64(1)
        r2 = rng.integers(0, 2**63, every, dtype=np.uint64)[cols] | np.uint64(1)
    else:  # many models: one value per occurring cell (O(votes), never O(n^2))
        r1 = rng.integers(0, 2**63, n_cells, dtype=np.uint64) | np.uint64(1)
        r2 = rng.integers(0, 2**63, n_cells, dtype=np.uint64) | np.uint64(1)
    # units of one vote (most of an arena log's prompts): the pattern is the vote's cell, its hashes
    # r1[cell] and r2[cell]; counted per cell, never one sparse row each
    size = np.diff(np.append(starts, len(votes)))
    one = np.repeat(size == 1, size)  # per vote in unit order: its unit holds it alone
    single = np.bincount(compact[by_unit[one]], minlength=n_cells)
    single_cells = np.flatnonzero(single)
    # units of several votes: their rows summed in a sparse (units, cells) matrix, hashed as weighted sums
    several = ~one
    row = np.repeat(np.cumsum(size > 1) - 1, size)[several]
    units = sparse.csr_matrix((np.ones(row.size), (row, compact[by_unit[several]])),
                              shape=(int((size > 1).sum()), n_cells))
    units.sum_duplicates()
    cnt = units.data.astype(np.uint64)
    with np.errstate(over="ignore"):
        h1 = np.concatenate((r1[single_cells], np.add.reduceat(r1[units.indices] * cnt, units.indptr[:-1])))
        h2 = np.concatenate((r2[single_cells], np.add.reduceat(r2[units.indices] * cnt, units.indptr[:-1])))
    weight = np.concatenate((single[single_cells], np.ones(units.shape[0], dtype=np.int64)))
    # distinct (h1, h2) in increasing order (as np.unique over the rows), with their units summed
    srt = np.lexsort((h2, h1))
    h1, h2 = h1[srt], h2[srt]
    new = np.flatnonzero(np.concatenate(([True], (h1[1:] != h1[:-1]) | (h2[1:] != h2[:-1]))))
    mult = np.add.reduceat(weight[srt], new)
    ones = sparse.csr_matrix((np.ones(single_cells.size), (np.arange(single_cells.size), single_cells)),
                             shape=(single_cells.size, n_cells))
    return sparse.vstack([ones, units], format="csr")[srt[new]], mult, cols


def _cells_as_patterns(compact: np.ndarray,
                       cols: np.ndarray) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
    """``compact_patterns`` where every unit holds one vote: the patterns are the cells (the identity),
    each as often as votes fall in it."""
    from scipy import sparse

    n_cells = cols.size
    mult = np.bincount(compact, minlength=n_cells)
    mat = sparse.csr_matrix((np.ones(n_cells), (np.arange(n_cells), np.arange(n_cells))),
                            shape=(n_cells, n_cells))
    return mat, mult, cols


def occurring_cells(cells: np.ndarray, n_possible: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct cell codes in increasing order, each vote's index among them): ``np.unique(cells,
    return_inverse=True)``, by one count over the possible cells where they are few (no sort of every
    vote: 120,000 cells at 200 models against ten million votes)."""
    if n_possible > SEEDED_CELLS_MAX or n_possible > 4 * cells.size:
        cols, compact = np.unique(cells, return_inverse=True)
        return cols, compact.ravel()
    held = np.bincount(cells, minlength=n_possible) > 0
    cols = np.flatnonzero(held)
    index = np.cumsum(held) - 1
    return cols.astype(cells.dtype), index[cells]


def resampled_cells(votes: VoteSource, unit: str, B: int, rng: np.random.Generator, chunk: int | None = None):
    """Yield (cell codes (C,), (b, C) counts) of successive chunks of the B resamples: the occurring
    cells only, at most ``CHUNK_CELLS`` counts (and at most ``chunk`` resamples) at once. Each chunk is drawn
    and multiplied ``DRAW_ROWS`` resamples at a time (``_chunk_counts``), with a ``checkpoint`` between."""
    checkpoint()
    mat, mult, cols = compact_patterns(votes, unit)
    U = int(mult.sum())
    p = mult / U
    step = max(1, min(chunk or B, CHUNK_CELLS // max(1, mult.size, cols.size)))
    matT = mat.T.tocsr()
    # one vote per unit (an arena's one-pair prompts): the patterns are the cells, the product the identity
    identity = mat.shape[0] == mat.shape[1] == mat.nnz and bool(
        (mat.indices == np.arange(mat.nnz)).all() and (mat.data == 1).all())
    for s in range(0, B, step):
        yield cols, _chunk_counts(rng, U, p, min(step, B - s), None if identity else matT, cols.size)


DRAW_ROWS = 25
"""Resamples drawn (and multiplied into cell counts) at once within a chunk, a ``checkpoint`` between: at a
million votes a chunk of 200 took ~0.5 s of CPU in two calls, too long for a background bootstrap (the app's
Leaderboard) to wait before it pauses for a page's run (``engine.foreground``)."""


def _chunk_counts(rng: np.random.Generator, U: int, p: np.ndarray, b: int, matT: sparse.csr_matrix | None,
                  n_cells: int) -> np.ndarray:
    """(b, C) cell counts of b resamples: b multinomial draws of U units over the patterns' probabilities
    ``p`` times the patterns' cells (``matT``: None where the patterns are the cells), ``DRAW_ROWS`` rows at a
    time. The same numbers as one draw of b rows and one product: a Generator draws a multinomial's rows one
    after the other from one stream, and each row of a sparse product is its own sum
    (tests/test_count_bootstrap_pauses.py)."""
    out = np.empty((b, p.size if matT is None else n_cells))
    for r in range(0, b, DRAW_ROWS):
        checkpoint()  # the first too: after the patterns' compaction
        k = min(DRAW_ROWS, b - r)
        draws = rng.multinomial(U, p, size=k).astype(np.float64)  # (k, P)
        out[r:r + k] = draws if matT is None else (matT @ draws.T).T
    return out


def resampled_counts(votes: VoteSource, unit: str, B: int, rng: np.random.Generator):
    """Yield (b, n, n) W and T of successive chunks of the B resamples (dense: small n only)."""
    n = votes.n
    for cols, counts in resampled_cells(votes, unit, B, rng):
        b = counts.shape[0]
        W, T = np.empty((b, n, n)), np.empty((b, n, n))
        for r in range(0, b, DRAW_ROWS):  # element by element: the same sums in blocks, a checkpoint between
            if r:
                checkpoint()
            k = min(DRAW_ROWS, b - r)
            c = np.zeros((k, 3 * n * n))
            c[:, cols] = counts[r:r + k]
            c = c.reshape(k, n, n, 3)
            W[r:r + k] = c[..., 2] + c[..., 0].swapaxes(1, 2)
            T[r:r + k] = c[..., 1] + c[..., 1].swapaxes(1, 2)
        yield W, T


PAIR_SOLVERS = ("bt", "davidson", "rank-centrality")
"""Count rankers with a pair-list fit: above ``DENSE_MODELS_MAX`` models their dense batched kernels cost
O(n^3) (BT's incidence) or O(n^2) per resample, and each resample is fitted on its pairs instead."""

DENSE_RESAMPLE_MODELS_MAX = 2_000
"""Above this many models every count ranker's resamples are fitted one by one on their pair counts: a
dense chunk holds 3 n^2 cell counts per resample (96 MB at 2,000 models)."""


def _fit_on_pairs(ranker: str, n: int) -> bool:
    """Whether the bootstrap fits each resample on its pair counts rather than a dense batch."""
    return n > (DENSE_MODELS_MAX if ranker in PAIR_SOLVERS else DENSE_RESAMPLE_MODELS_MAX)


PAIR_BATCH_CHUNK = 8
"""Resamples held at once by the pair-list batch: 8 x (cells + 3 pairs) float64 counts (about 60 MB at
432,000 compared pairs)."""


def _fit_pair_batches(votes: VoteSource, obj, unit: str, B: int, rng: np.random.Generator, names,
                      params: dict):
    """Every resample's fit from its per-pair counts, ``PAIR_BATCH_CHUNK`` resamples at a time
    (``Ranker.fit_pairs_batch``: win rate, Copeland, majority): memory O(resamples x compared pairs), never
    O(n^2); the resamples are drawn exactly as for the dense batch, so the numbers are the same."""
    n, k = votes.n, len(names)
    code = {m: i for i, m in enumerate(votes.models)}
    at = np.full(n, -1, dtype=np.int64)  # votes' model code → position on the board (-1: not on it)
    at[[code[m] for m in names]] = np.arange(k)
    rows, n_reg, n_unconv, how = [], 0, 0, ""
    layout = None
    for cols, counts in resampled_cells(votes, unit, B, rng, chunk=PAIR_BATCH_CHUNK):
        if layout is None:  # the same occurring cells in every chunk: lay them out on their pairs once
            pair, outcome = cols // 3, cols % 3 - 1
            a, b = at[pair // n], at[pair % n]
            on_board = (a >= 0) & (b >= 0)  # as the dense batch's W[:, keep][:, :, keep]
            swap = a > b  # the board's model order decides lo and hi (majority's exact_half="later")
            lo, hi = np.where(swap, b, a), np.where(swap, a, b)
            key = lo * k + hi
            pairs, slot = np.unique(key[on_board], return_inverse=True)
            slot = slot.ravel()
            col = np.flatnonzero(on_board)
            won = outcome[col] * np.where(swap[col], -1, 1)  # +1 the board's lo won, -1 its hi, 0 a tie
            layout = (pairs // k, pairs % k, col, slot, won)
        lo_p, hi_p, col, slot, won = layout
        c = counts[:, col]
        per = []
        for sign in (1, -1, 0):
            x = np.zeros((c.shape[0], lo_p.size))
            x[:, slot[won == sign]] = c[:, won == sign]  # one cell per (pair, outcome): no collisions
            per.append(x)
        out = obj.fit_pairs_batch(k, (lo_p, hi_p, *per), **params)
        s, r, u, how = out
        games = per[0] + per[1] + per[2]
        drawn = pair_sums(k, lo_p, hi_p, games, games) > 0  # no drawn vote on a model: undefined there
        rows.append(np.where(drawn, np.asarray(s, dtype=np.float64), np.nan))
        n_reg, n_unconv = n_reg + r, n_unconv + u
    return np.vstack(rows), n_reg, n_unconv, how


def _pair_refits(votes: VoteSource, obj, unit: str, B: int, rng: np.random.Generator, names, params: dict):
    """One fit per resample on its pair counts (no (n, n) array: many models), for the rankers that
    read only the counts, each started from the fit of all the votes (``Ranker.fit_counts_warm``: fewer
    iterations, the same fit to the solver's tolerance); the resamples are drawn exactly as for the
    batched fit."""
    n = votes.n
    pos = {m: k for k, m in enumerate(votes.models)}
    keep = np.zeros(n, dtype=bool)
    keep[[pos[m] for m in names]] = True
    rows, n_reg, n_unconv = [], 0, 0
    none = np.zeros(n, dtype=np.int64)
    if isinstance(votes, CountedBattles):
        every = votes.counts
    else:
        cells = votes.cells()
        every = PairCounts.of_votes(votes.models, cells // 3 // n, cells // 3 % n, cells % 3 - 1,
                                    votes=none, n_graphs=none, n_prompts=none)
    point = obj.fit_counts(every.restrict(keep), None, **params)  # every resample's fit starts here
    # (``Ranker.fit_counts_warm``)
    for cols, counts in resampled_cells(votes, unit, B, rng, chunk=1):  # fitted one by one: drawn so
        pair = cols // 3
        for c in counts:
            drawn = c > 0
            pc = PairCounts.of_votes(votes.models, pair[drawn] // n, pair[drawn] % n, cols[drawn] % 3 - 1,
                                     votes=none, n_graphs=none, n_prompts=none, weight=c[drawn])
            res = obj.fit_counts_warm(pc.restrict(keep), point, **params)
            rows.append(res.scores.reindex(list(names)).to_numpy(np.float64))
            n_reg += float(res.details.get("alpha", 0.0) or 0.0) > 0
            n_unconv += res.details.get("converged", True) is False
    return np.vstack(rows), n_reg, n_unconv


def _refits(votes: VoteSource, obj, unit: str, B: int, rng: np.random.Generator, names, params: dict):
    """One refit per resample for rankers without a batched count fit (Elo: order matters): each vote is
    repeated as often as its unit was drawn, in the votes' order. A sequential ranker with a batched form
    (``Ranker.fit_votes_resampled``: Elo) fits the same draws in one pass; returns (B, models) scores,
    resamples regularised, unconverged, and how (None: one refit per resample)."""
    if isinstance(votes, CountedBattles):
        raise LensError(f"The {obj.name} ranker has no batched fit and pair counts hold no single battle to "
                        "refit on; choose bt, davidson, rank-centrality, winrate, copeland or majority.")
    if unit == "vote":
        unit_of, U = np.arange(len(votes)), len(votes)
    else:
        _, unit_of = np.unique(votes.graph if unit == "graph" else votes.prompt, return_inverse=True)
        unit_of = unit_of.ravel()
        U = int(unit_of.max()) + 1
    # row b: rng.multinomial(U, [1/U] * U), the b-th in turn; drawn ahead in a thread where compiled
    with DrawnRows(rng, U, B) as drawn:
        repeats = ResampleRepeats(drawn, None if unit == "vote" else unit_of)
        batched = obj.fit_votes_resampled(votes, repeats, B, **params)
        table = drawn.ready(B)
    if batched is not None:
        scores, how = batched
        pos = {m: i for i, m in enumerate(votes.models)}
        return scores[:, [pos[m] for m in names]], 0, 0, how
    rows, n_reg, n_unconv = [], 0, 0
    for b in range(B):
        idx = np.repeat(np.arange(len(votes)), table[b][unit_of])
        sub = votes.take(idx)
        res = obj.fit_counts(sub.fit_pair_counts(), sub, **params)
        rows.append(res.scores.reindex(list(names)).to_numpy(np.float64))
        n_reg += float(res.details.get("alpha", 0.0) or 0.0) > 0
        n_unconv += res.details.get("converged", True) is False
    return np.vstack(rows), n_reg, n_unconv, None


def bootstrap_counts(
    votes: VoteSource,
    ranker: str = "bt",
    B: int = 100,
    seed: int = 0,
    *,
    level: float = 0.95,
    unit: str | None = None,
    models: tuple[str, ...] | None = None,
    ranker_params: dict | None = None,
    **params,
) -> BootstrapResult:
    """Percentile bootstrap of a count ranker over B resamples of graphs, prompts or votes; the ranker's
    parameters as keywords, or as ``ranker_params`` (where one is named like this function's own: Elo's
    ``seed`` shuffle)."""
    _check(B, level)
    obj = ranker_object(ranker)
    params = obj.check({**(ranker_params or {}), **params})
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
    if obj.has_pair_batch(params) and len(names) > DENSE_MODELS_MAX:
        samples, n_reg, n_unconv, how = _fit_pair_batches(votes, obj, unit, int(B), rng, names, params)
        method = (f"multinomial {unit} weights on a sparse {unit}-by-cell count matrix, {how} "
                  f"({len(names):,} models)")
    elif obj.has_batch(params) and _fit_on_pairs(obj.name, len(names)):
        samples, n_reg, n_unconv = _pair_refits(votes, obj, unit, int(B), rng, names, params)
        method = (f"multinomial {unit} weights on a sparse {unit}-by-cell count matrix, one fit per resample "
                  f"on its pair counts ({len(names):,} models)")
    elif obj.has_batch(params):
        rows, n_reg, n_unconv, how = [], 0, 0, ""
        for W, T in resampled_counts(votes, unit, int(B), rng):
            checkpoint()
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
        samples, n_reg, n_unconv, how = _refits(votes, obj, unit, int(B), rng, names, params)
        method = "one refit per resample" if how is None else f"batched: {unit} draws, {how}"
    ranks = ranks_from_scores_batch(samples)
    return BootstrapResult(ranker, names, int(B), int(seed), float(level), samples, ranks, method, int(n_reg),
                           int(n_unconv), unit, int(np.isnan(samples).any(axis=1).sum()))
