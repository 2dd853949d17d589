"""Sensitivity curves: distance to the reference as a function of keep-K or of mu, with bands.

Paper 000, Section 4.2 (Figures 2, 3, 5, 6): for each K (every K from 1 to the pool size) or each
mu (a log grid), keep the K graphs of smallest S_mu per category, rank them with half-tie
Bradley-Terry, and measure the four distances of Appendix C.2 to the reference.

What is plotted and what the band is (our choice, stated): the paper draws its curves from single
point estimates and reports resampled summaries only for Table 2, where its method keeps 25 graphs
and draws 20 of them *without replacement* 100 times, giving the mean with a 95 % interval. The
curves follow that protocol at every x: keep K, draw ``m = min(round(draw_fraction·K), kept)`` of
the kept graphs without replacement (draw_fraction 0.8 = the paper's 25 → 20; a group with fewer
than K graphs keeps them all and, like Table 2's cell, draws min(20, kept) at K = 25),
``resamples`` times. The
plotted statistic is ``mean`` (the mean distance over the draws), and the band ``ci_low`` …
``ci_high`` is its 95 % interval, mean ± 1.96·sd/√R — the "±" of Table 2 — so it always contains
the curve. ``q_low``/``q_high`` (2.5/97.5 % of the draws' distances) show the spread of a single
draw, and ``point`` is the paper's point estimate (all K kept graphs fitted once). A bootstrap with
replacement is not used: its resamples hold fewer distinct graphs, which biases the distance upward
and puts the band above the curve.

Random numbers: the draws use the common random numbers of ``engine.experiments.draws`` (one uniform per
graph and resample, per group), so a cell's numbers do not depend on the other K or mu requested,
the curve at K = 25 equals the Trunc25→20 cell of Table 2, and neighbouring K share most of their
draws. Truncation scores are computed on the graphs as judged (every model); only ranking and
distances use the reference-rated models.

Bradley-Terry fits that stop at the solver's iteration cap are counted per row
(``bt_nonconverged``: point fit + draws; the macro row sums its groups) and named in ``note``. A
category whose pool is empty (e.g. no sampling replicates for ``pool="sampling"``) has no rows;
the macro row's ``n_categories`` and ``note`` say over how many categories it averages and which
were left out.

Fits: a cell (one group's kept graphs at one x, and its draw size) has its point fit, started from zeros,
and its R draws' fits, each started from that point fit (as Table 2's cells start from the fit of their
kept graphs): a cell's numbers depend on the cell alone, so x that keep the same graphs (neighbouring mu,
or the same K of two curves) share one set of fits (``FitCache``), and a curve's new cells are fitted in
batches of at most ``CELL_FITS`` fits and ``CELL_ENTRIES`` matrix entries.
Pools: ``perturbed`` (originals + paraphrases, default), ``sampling`` (originals + sampling
replicates: the control of Figure 6; a category without replicates has an empty pool) or ``all``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.experiments.batch_fits import bt_scores_info, flat_matrices
from engine.experiments.draws import DEFAULT_SEED, by_key, check_seed, keep_draw_uniforms, keep_draw_weights
from engine.experiments.protocols import MACRO, category_positions, rated_columns
from engine.foreground import checkpoint
from engine.graphs.key_order import key_rank
from engine.graphs.stack import GraphStack
from engine.graphs.truncation import (
    POOLS,
    PoolScores,
    check_weights,
    is_sample,
    keep_k_scores,
    keep_pool,
)
from engine.rankers.base import single_thread_blas
from engine.ranking.distances import DISTANCES, distances_for_scores
from engine.ranking.reference import common_models, reference_of, reference_ranks

DEFAULT_MU_GRID: tuple[float, ...] = tuple(float(x) for x in np.logspace(-2, 2, 17))
"""0.01 … 100, four points per decade: four decades around the paper's mu = 1."""

DRAW_FRACTION = 0.8
"""Share of the kept graphs drawn (without replacement) per resample: the paper's 25 → 20."""

POOLED = "all"
"""The group name of a pooled (not per-category) curve."""

__all__ = [
    "DEFAULT_MU_GRID",
    "DRAW_FRACTION",
    "POOLS",
    "FitCache",
    "draw_size",
    "keep_k_curve",
    "keep_k_orders",
    "keep_k_selections",
    "mu_curve",
]


def draw_size(k: int, kept: int | None = None, draw_fraction: float = DRAW_FRACTION) -> int:
    """Graphs drawn when keeping ``k``: round(draw_fraction·k) (halves up), at least 1, at most the
    ``kept`` graphs there are (default k). So K = 25 draws 20, as Table 2's Trunc25→20, and a group
    with only 10 graphs draws all 10 there — as that cell does."""
    kept = int(k) if kept is None else int(kept)
    return int(min(kept, max(1, np.floor(draw_fraction * k + 0.5 + 1e-9))))


def _pools(stack: GraphStack, per_category: bool, pool: str, krank: np.ndarray,
           pool_pos: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """(positions of the chosen pool by category — or one pooled group — in graph-key order, the
    categories whose pool is empty and are left out). Graphs that cannot hold a cycle stay out of
    the pool, as in ``engine.graphs.truncation.keep_k_graphs``: their zero score is no evidence.
    ``pool_pos``: the pool's positions (``keep_k_scores(...).pos``) when already known."""
    if pool_pos is None:
        from engine.graphs.cycles import cycle_capacity

        pool_pos = keep_pool(stack.keys, cycle_capacity(stack), pool)[0]
    member = np.zeros(stack.T, dtype=bool)
    member[pool_pos] = True
    groups = category_positions(stack) if per_category else {POOLED: np.arange(stack.T)}
    samp = is_sample(stack.keys)
    # as Table 2's Sample cell: no replicates, no sampling pool (not the originals alone)
    if pool == "sampling":
        groups = {c: pos if samp[pos].any() else pos[:0] for c, pos in groups.items()}
    out = {c: by_key(pos[member[pos]], krank) for c, pos in groups.items()}
    left = [c for c, pos in out.items() if not pos.size]
    out = {c: pos for c, pos in out.items() if pos.size}
    if not out:
        raise LensError(f"The {pool} pool is empty for this selection.")
    return out, left


def scored_pool(
    stack: GraphStack,
    pool: str,
    *,
    mu: float = 1.0,
    lam3: float = 1.0,
    lam4: float | None = None,
    counts: pd.DataFrame | None = None,
    capacity: pd.DataFrame | None = None,
) -> PoolScores:
    """The keep-K scores of the curves, from ``engine.graphs.truncation.keep_k_scores`` as the CLI and the
    app score (coverage-normalised S_mu, reference capacity over the ``pool`` graphs that can hold a
    cycle); ``counts`` / ``capacity`` when already computed."""
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    counts = cycle_counts(stack) if counts is None else counts
    capacity = cycle_capacity(stack) if capacity is None else capacity
    return keep_k_scores(stack.keys, counts, capacity, pool=pool, mu=mu, lam3=lam3, lam4=lam4)


def pool_scores(
    stack: GraphStack,
    pool: str,
    *,
    mu: float = 1.0,
    lam3: float = 1.0,
    lam4: float | None = None,
    counts: pd.DataFrame | None = None,
    capacity: pd.DataFrame | None = None,
) -> np.ndarray:
    """Every graph's keep-K score (``scored_pool(...).scores``), as ``keep_k_graphs`` scores it."""
    return scored_pool(stack, pool, mu=mu, lam3=lam3, lam4=lam4, counts=counts, capacity=capacity).scores


def _with_bad(note: str, bad: int, fits: int) -> str:
    if not bad:
        return note
    return "; ".join(x for x in (note, f"{bad} of {fits} Bradley-Terry fits did not converge") if x)


def _check(resamples: int, seed: int, draw_fraction: float) -> None:
    if int(resamples) != resamples or resamples < 0:
        raise LensError(f"The number of resamples must be a whole number ≥ 0; got {resamples!r}.")
    check_seed(seed)
    if not 0 < float(draw_fraction) <= 1:
        raise LensError(f"The draw fraction must lie in (0, 1]; got {draw_fraction!r}.")


CELL_FITS = 4096
"""Most fits per batch when the curves' cells are fitted (few models): tens of ms of work between two
checkpoints (a background curve pauses there for a page's run)."""

CELL_ENTRIES = 2**19
"""Most matrix entries (fits × n²) per batch of cells: with many models a batch is one or a few cells (a
70-model cell of 101 fits is 495,000 entries, 4 MB a copy; ~0.1-0.2 s between checkpoints)."""

FIT_CACHE_BYTES = 64 * 2**20
"""How many bytes of fits a ``FitCache`` keeps (the oldest cells go first): every distinct cell of the 17
keep-K curves of vicuna80's pooled judges (3,142 cells of 101 fits of 9 models) is ~23 MB."""


CELL_KEY_BYTES = 200
"""What a ``FitCache`` counts for a cell's key and bookkeeping besides its fits (a key holds a 16-byte digest
of the kept graphs, not the graphs)."""


class FitCache:
    """The Bradley-Terry fits of the curves' cells, kept for the next curve of the same inputs.

    A cell is one group's kept graphs at one x and the size of its draws: its fits are the point fit (all
    kept graphs, started from zeros) and one fit per resample's draw (started from the point fit), so they
    are a function of the cell alone, whichever curve, x or other cells it is fitted with. Keep-K curves at
    two μ keep the same graphs at most K, and a μ curve's cells are keep-K curves' cells: a curve made with
    the cache fits only the cells no earlier curve had. ``inputs`` (``_fit_inputs``: every graph's matrix,
    the groups and pools, the resamples, seed and draw fraction) is bound on first use: a curve of other
    inputs neither reads nor fills it. Thread-safe (the app's warming thread and its page share one)."""

    def __init__(self, max_bytes: int = FIT_CACHE_BYTES) -> None:
        import threading
        from collections import OrderedDict

        self.max_bytes = int(max_bytes)
        self._inputs: tuple | None = None
        self._cells: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def binds(self, inputs: tuple) -> bool:
        """Whether this cache serves curves of ``inputs`` (the first inputs it saw)."""
        with self._lock:
            if self._inputs is None:
                self._inputs = inputs
            return self._inputs == inputs

    def get(self, cell: tuple) -> tuple[np.ndarray, np.ndarray] | None:
        """The cell's (fits (1 + resamples, n), converged flags), or None."""
        with self._lock:
            got = self._cells.get(cell)
            if got is not None:
                self._cells.move_to_end(cell)
            return got

    def put(self, cell: tuple, fits: np.ndarray, converged: np.ndarray) -> None:
        """Keep the cell's fits (read-only), dropping the oldest cells past ``max_bytes``."""
        fits.flags.writeable = converged.flags.writeable = False
        with self._lock:
            if cell in self._cells:
                return
            self._cells[cell] = (fits, converged)
            self._bytes += fits.nbytes + converged.nbytes + CELL_KEY_BYTES
            while self._bytes > self.max_bytes and len(self._cells) > 1:
                _, (f, c) = self._cells.popitem(last=False)
                self._bytes -= f.nbytes + c.nbytes + CELL_KEY_BYTES

    def __len__(self) -> int:
        with self._lock:
            return len(self._cells)


def _fit_inputs(wflat: np.ndarray, pools: dict[str, np.ndarray], resamples: int, seed: int,
                draw_fraction: float) -> tuple:
    """What a cell's fits depend on besides its kept graphs and draw size: every graph's half-tie matrix,
    the groups and their pools (the draws' uniforms are per group and pool size), the resamples, the seed
    and the draw fraction (a ``FitCache`` serves one such tuple)."""
    import hashlib

    digest = hashlib.blake2b(np.ascontiguousarray(wflat).tobytes(), digest_size=16).hexdigest()
    return (digest, wflat.shape, tuple((g, tuple(pos.tolist())) for g, pos in pools.items()), int(resamples),
            int(seed), float(draw_fraction))


def cell_key(group: str, kept: np.ndarray, m: int) -> tuple[str, bytes, int]:
    """A cell's key: its group, a digest of its kept positions (in graph-key order) and its draw size."""
    import hashlib

    digest = hashlib.blake2b(np.ascontiguousarray(kept, dtype=np.int64).tobytes(), digest_size=16).digest()
    return group, digest, int(m)


def _fit_cells(cells: dict[tuple, np.ndarray], uni: dict[str, np.ndarray], pools: dict[str, np.ndarray],
               krank: np.ndarray, wflat: np.ndarray, n: int, R: int,
               fits: FitCache | None) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """The fits of ``cells`` (key → kept positions, in graph-key order), each (fits (1 + R, n), converged
    flags), also kept in ``fits`` when given: per cell, the point fit of all its kept graphs from zeros, then
    each of the ``R`` draws (the ``m`` kept graphs with the smallest of the group's common uniforms,
    ``keep_draw_weights``) started from that point fit; batches of at most ``CELL_FITS`` fits and
    ``CELL_ENTRIES`` matrix entries, a checkpoint before each (a background curve pauses there)."""
    per = max(1, min(CELL_FITS // (1 + R), CELL_ENTRIES // ((1 + R) * n * n)))
    made: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    todo = list(cells.items())
    for s in range(0, len(todo), per):
        checkpoint()  # a background curve (the app's warming) pauses here for a slider move's rerun
        part = todo[s:s + per]
        points, draws = [], []
        for (g, _, m), kept in part:
            rows = wflat[kept]
            points.append(rows.sum(axis=0))  # half-integer counts: exact in any order
            if R:
                cols = np.searchsorted(krank[pools[g]], krank[kept])
                draws.append(keep_draw_weights(uni[g][:, cols], m) @ rows)
        point, point_ok = bt_scores_info(np.stack(points).reshape(-1, n, n))
        if R:
            draw, draw_ok = bt_scores_info(np.concatenate(draws).reshape(-1, n, n),
                                           np.repeat(point, R, axis=0))
        for c, (cell, _) in enumerate(part):
            if R:
                cell_fits = np.vstack([point[c:c + 1], draw[c * R:(c + 1) * R]])
                cell_ok = np.concatenate([point_ok[c:c + 1], draw_ok[c * R:(c + 1) * R]])
            else:
                cell_fits, cell_ok = point[c:c + 1].copy(), point_ok[c:c + 1].copy()
            made[cell] = (cell_fits, cell_ok)
            if fits is not None:
                fits.put(cell, cell_fits, cell_ok)
    return made


def _evaluate(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    pools: dict[str, np.ndarray],
    xs: Sequence[float],
    kept_of: dict[tuple[int, str], np.ndarray],
    param: str,
    resamples: int,
    seed: int,
    draw_fraction: float,
    krank: np.ndarray,
    k_of: list[int],
    left: list[str],
    fits: FitCache | None = None,
) -> pd.DataFrame:
    """Point + keep→draw distances for every (x, group) cell; ``kept_of[(x index, group)]`` are the
    kept stack positions, ``krank`` the graph-key rank of every graph, ``k_of[x index]`` the K kept
    there, ``left`` the categories left out (empty pool). ``fits``: the cells' fits of earlier curves of
    the same inputs (``FitCache``; filled here with this curve's new cells), or None. Either way x that keep
    the same graphs share one cell, fitted once."""
    groups = list(pools)
    models = common_models(stack, reference, groups)
    st = stack  # every model is ranked (as the leaderboard and compare rank); distances on the rated ones
    rated = rated_columns(stack, models)
    refs = {g: reference_ranks(reference_of(reference, g), models) for g in groups}
    n, R, X, G = st.n, int(resamples), len(xs), len(groups)
    wflat = flat_matrices(st)["wtilde"]
    uni = {g: keep_draw_uniforms(seed, g, pools[g].size, R) for g in groups}
    scores = np.zeros((X, G, 1 + R, n))
    n_kept = np.zeros((X, G), dtype=np.int64)
    n_draw = np.zeros((X, G), dtype=np.int64)
    bad = np.zeros((X, G), dtype=np.int64)
    inputs = _fit_inputs(wflat, pools, R, seed, draw_fraction)
    shared = fits if fits is not None and fits.binds(inputs) else None
    cell_of: dict[tuple[int, int], tuple] = {}
    kept_at: dict[tuple, np.ndarray] = {}
    for xi in range(X):
        for gi, g in enumerate(groups):
            kept = by_key(kept_of[(xi, g)], krank).astype(np.int64)
            m = draw_size(k_of[xi], kept.size, draw_fraction)
            cell_of[(xi, gi)] = key = cell_key(g, kept, m)
            kept_at.setdefault(key, kept)
            n_kept[xi, gi], n_draw[xi, gi] = kept.size, m
    # the cells taken from the shared cache are held here, so the curve never depends on what it still keeps
    have = {key: got for key in kept_at if shared is not None and (got := shared.get(key)) is not None}
    new = {key: kept for key, kept in kept_at.items() if key not in have}
    have.update(_fit_cells(new, uni, pools, krank, wflat, n, R, shared))
    for (xi, gi), key in cell_of.items():
        cell_fits, cell_ok = have[key]
        scores[xi, gi] = cell_fits
        bad[xi, gi] = int((~cell_ok).sum())
    dist = {d: np.zeros((X, G, 1 + R)) for d in DISTANCES}
    for gi, g in enumerate(groups):
        d = distances_for_scores(scores[:, gi].reshape(-1, n)[:, rated], refs[g])
        for k in DISTANCES:
            dist[k][:, gi] = d[k].reshape(X, 1 + R)
    frames = []
    cats = groups + ([MACRO] if G > 1 else [])
    macro_note = (f"macro over {G} of {G + len(left)} categories"
                  + (f" (left out, empty pool: {', '.join(left)})" if left else ""))
    for dname in DISTANCES:
        v = dist[dname]
        if G > 1:
            v = np.concatenate([v, v.mean(axis=1, keepdims=True)], axis=1)  # macro: per-resample mean
        point, res = v[:, :, 0], v[:, :, 1:]
        flat_res = res.reshape(point.size, R)
        if R:
            mean = flat_res.mean(axis=1)
            sd = flat_res.std(axis=1, ddof=1) if R > 1 else np.zeros(flat_res.shape[0])
            q_lo, q_hi = np.quantile(flat_res, [0.025, 0.975], axis=1)
        else:
            mean = point.ravel()
            sd = np.zeros(mean.size)
            q_lo = q_hi = mean
        half = 1.96 * sd / np.sqrt(max(R, 1))
        kept = np.concatenate([n_kept, n_kept.sum(axis=1, keepdims=True)], axis=1) if G > 1 else n_kept
        drawn = np.concatenate([n_draw, n_draw.sum(axis=1, keepdims=True)], axis=1) if G > 1 else n_draw
        nonconv = np.concatenate([bad, bad.sum(axis=1, keepdims=True)], axis=1) if G > 1 else bad
        ncat = np.tile(np.array([1] * G + ([G] if G > 1 else [])), X)
        notes = np.tile(
            np.array([""] * G + [macro_note] if G > 1 else [macro_note if left else ""], dtype=object), X
        )
        per_cell = 1 + R
        notes = np.array([_with_bad(t, int(b), per_cell * (c if c > 0 else 1))
                          for t, b, c in zip(notes, nonconv.ravel(), ncat, strict=True)], dtype=object)
        frames.append(pd.DataFrame({
            param: np.repeat(np.asarray(xs, dtype=np.float64 if param == "mu" else np.int64), len(cats)),
            "category": np.tile(np.asarray(cats, dtype=object), X),
            "distance": dname,
            "point": point.ravel(), "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
            "half_width": half, "q_low": q_lo, "q_high": q_hi, "sd": sd,
            "n_kept": kept.ravel(), "n_draw": drawn.ravel(), "n_categories": ncat, "resamples": R,
            "bt_nonconverged": nonconv.ravel(), "note": notes,
        }))
    frame = pd.concat(frames, ignore_index=True)
    x_idx = np.tile(np.repeat(np.arange(X), len(cats)), len(DISTANCES))
    d_idx = np.repeat(np.arange(len(DISTANCES)), X * len(cats))
    c_idx = np.tile(np.arange(len(cats)), X * len(DISTANCES))
    # x, then distance, then category
    frame = frame.iloc[np.lexsort((c_idx, d_idx, x_idx))].reset_index(drop=True)
    frame.attrs["models"] = models
    return frame


def keep_k_orders(
    stack: GraphStack, *, mu: float = 1.0, lam3: float = 1.0, lam4: float | None = None,
    per_category: bool = True, pool: str = "perturbed", counts: pd.DataFrame | None = None,
    capacity: pd.DataFrame | None = None,
) -> tuple[dict[str, np.ndarray], list[str], np.ndarray, dict[str, np.ndarray]]:
    """(the pool positions per group, the groups left out (empty pool), the graph-key rank, each group's
    pool from the smallest keep-K score up, equal scores in graph-key order (``keep_k_order``)). Keep-K
    keeps a prefix of each group's order at every K (``keep_k_index``), so a keep-K curve is a function of
    these orders, not of the weights that made them: two μ whose orders are equal have the same curve, to
    the last digit (the app's curve grid makes it once, ``engine.views.curve_grid``). ``counts`` /
    ``capacity``: the stack's cycle tables when already computed."""
    from engine.graphs.truncation import keep_k_order

    krank = key_rank(stack.keys)
    scored = scored_pool(stack, pool, mu=mu, lam3=lam3, lam4=lam4, counts=counts, capacity=capacity)
    pools, left = _pools(stack, per_category, pool, krank, scored.pos)
    orders = {g: keep_k_order(scored.scores, krank, pos) for g, pos in pools.items()}
    return pools, left, krank, orders


def keep_k_selections(
    stack: GraphStack, ks: list[int] | range | None = None, *, mu: float = 1.0, lam3: float = 1.0,
    lam4: float | None = None, per_category: bool = True, pool: str = "perturbed",
) -> tuple[list[int], dict[str, np.ndarray], list[str], np.ndarray, dict[tuple[int, str], np.ndarray]]:
    """The graphs a keep-K curve keeps: (the Ks, the pool positions per group, the groups left out
    (empty pool), the graph-key rank, ``kept_of[(K index, group)]`` = kept stack positions). Every K
    is scored by ``engine.graphs.truncation.keep_k_scores`` and kept as ``keep_k_index`` keeps (the K first
    of the group's ``keep_k_orders`` order, sorted), as the app and the CLI do."""
    pools, left, krank, orders = keep_k_orders(stack, mu=mu, lam3=lam3, lam4=lam4, per_category=per_category,
                                               pool=pool)
    kmax = max(p.size for p in pools.values())
    ks = list(range(1, kmax + 1)) if ks is None else [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise LensError(f"Every K of a keep-K curve must be ≥ 1; got {ks}.")
    kept_of = {(xi, g): np.sort(order[:k]) for xi, k in enumerate(ks) for g, order in orders.items()}
    return ks, pools, left, krank, kept_of


def keep_k_curve(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    ks: list[int] | range | None = None,
    *,
    mu: float = 1.0,
    lam3: float = 1.0,
    lam4: float | None = None,
    per_category: bool = True,
    pool: str = "perturbed",
    resamples: int = 100,
    seed: int = DEFAULT_SEED,
    draw_fraction: float = DRAW_FRACTION,
    fits: FitCache | None = None,
) -> pd.DataFrame:
    """Distance to the reference for every K (default 1 … the largest pool), paper 000 Fig. 2/5/6.

    K is per category when ``per_category`` (a category smaller than K keeps all its graphs;
    ``n_kept`` says how many were kept, ``n_draw`` how many each resample draws). Columns: k,
    category, distance, point, mean, ci_low, ci_high, half_width, q_low, q_high, sd, n_kept,
    n_draw, n_categories, resamples, bt_nonconverged, note. Plot ``mean`` inside ``ci_low``…``ci_high`` (see
    the module docstring). ``fits``: a ``FitCache`` shared by curves of the same selection and draws (the
    app's curves at other μ and K): only cells no earlier curve fitted are fitted, and the frame is the one
    made without it, to the last digit (tests/test_curve_cells.py).
    """
    _check(resamples, seed, draw_fraction)
    ks, pools, left, krank, kept_of = keep_k_selections(stack, ks, mu=mu, lam3=lam3, lam4=lam4,
                                                        per_category=per_category, pool=pool)
    with single_thread_blas():
        return _evaluate(
            stack, reference, pools, ks, kept_of, "k", resamples, seed, draw_fraction, krank, ks, left, fits
        )


def mu_curve(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    mus: list[float] | tuple[float, ...] | np.ndarray = DEFAULT_MU_GRID,
    *,
    k: int = 25,
    per_category: bool = True,
    pool: str = "perturbed",
    resamples: int = 100,
    seed: int = DEFAULT_SEED,
    draw_fraction: float = DRAW_FRACTION,
    fits: FitCache | None = None,
) -> pd.DataFrame:
    """Distance to the reference against mu in S_mu = C3_bad + mu·C4_bad at fixed K (paper 000 Fig. 3).

    mu may be any finite number (the default grid is 0.01 … 100 on a log scale). Columns: mu,
    category, distance, point, mean, ci_low, ci_high, half_width, q_low, q_high, sd, n_kept,
    n_draw, n_categories, resamples, bt_nonconverged, note. ``fits``: as ``keep_k_curve``'s (a μ curve's
    cells are keep-K curves' cells).
    """
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    _check(resamples, seed, draw_fraction)
    mus = [float(m) for m in mus]
    if not mus:
        raise LensError("A mu curve needs at least one mu.")
    for m in mus:
        check_weights(mu=m)
    if int(k) != k or k < 1:
        raise LensError(f"K must be a whole number ≥ 1; got {k!r}.")
    counts, capacity = cycle_counts(stack), cycle_capacity(stack)
    krank = key_rank(stack.keys)
    pool_pos = keep_pool(stack.keys, capacity, pool)[0]
    pools, left = _pools(stack, per_category, pool, krank, pool_pos)
    kept_of = {}
    for xi, m in enumerate(mus):
        scored = keep_k_scores(stack.keys, counts, capacity, pool=pool, mu=m, pos=pool_pos)
        kept_of.update({(xi, g): scored.keep(int(k), krank, among=pos) for g, pos in pools.items()})
    with single_thread_blas():
        return _evaluate(stack, reference, pools, mus, kept_of, "mu", resamples, seed, draw_fraction, krank,
                         [int(k)] * len(mus), left, fits)
