"""The two half-tie Bradley-Terry solvers, batched over (B, n, n) stacks of W~ matrices: damped Newton
(the default; the negative Hessian is the graph Laplacian with weights N_ij p_ij p_ji, made invertible
by the mean-zero constraint) and Hunter's (2004) minorization-maximization. ``engine.rankers.bt``
chooses, regularises and registers the ranker.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.rankers.base import centred

ROW_SUM_COLUMNS = 32
"""Up to this many columns ``row_sums`` adds column by column; past it one running sum along the rows does
(the same order, the same sums)."""


def row_sums(x: np.ndarray) -> np.ndarray:
    """(B,) sums of a (B, k) array's rows, each added left to right from zero.

    Numpy's own sums (``sum``, ``einsum``, a BLAS product) choose their order of summation by the shape
    of the whole array, so a row's sum could change with the rows beside it: the Newton fits below
    sum this way, so that a fit is the same bits whichever batch it is fitted in (the sensitivity
    curves share fits between curves, ``engine.experiments.curves.FitCache``)."""
    x = np.asarray(x, dtype=np.float64)
    B, k = x.shape
    if k <= ROW_SUM_COLUMNS:
        out = np.zeros(B)
        for c in range(k):
            out += x[:, c]
        return out
    # a running sum is sequential along each row; it starts from the first term, not from zero, which
    # differs only for a row of -0.0 terms alone (-0.0 where zero + -0.0 is +0.0): adding 0.0 at the end
    # gives +0.0 there and changes nothing else. Until 0.20.4 a weighted count did this over a (B·k)
    # index built per call (the same sums, 1.4x the time at 200 × 2,415).
    return np.add.accumulate(x, axis=1)[:, -1] + 0.0


def row_centred(x: np.ndarray) -> np.ndarray:
    """``centred`` with the mean from ``row_sums``: a row's result does not depend on the others."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] == 0:
        return x.copy()
    return x - (row_sums(x) / x.shape[1])[:, None]


def _loglik(theta: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Dense BT log-likelihood sum_ij W~_ij log sigmoid(theta_i - theta_j) for (B, n) theta (a slow twin)."""
    d = theta[:, :, None] - theta[:, None, :]
    return -(w * np.logaddexp(0.0, -d)).sum(axis=(1, 2))


@lru_cache(maxsize=32)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Upper-triangle pair indices (i < j), the (n, pairs) signed incidence's transpose (+1 at i, -1 at j),
    each model's n - 1 pairs in pair order (n, n - 1) with its sign in each (+1 as i, -1 as j), flat
    positions of ii."""
    i, j = np.triu_indices(n, 1)
    inc_t = np.zeros((n, i.size))
    inc_t[i, np.arange(i.size)] = 1.0
    inc_t[j, np.arange(i.size)] = -1.0
    ends, pair = np.concatenate([i, j]), np.concatenate([np.arange(i.size)] * 2)
    order = np.lexsort((pair, ends))  # by model, then pair
    around = pair[order].reshape(n, max(n - 1, 0))
    sign = np.concatenate([np.ones(i.size), -np.ones(i.size)])[order].reshape(n, max(n - 1, 0))
    return i, j, inc_t, around, sign, np.arange(n) * (n + 1)


@lru_cache(maxsize=64)
def _sparse_incidence(n: int, signed: bool):
    """The (n, pairs) incidence of ``_pairs`` as a CSR matrix (column indices sorted), signed or not."""
    from scipy.sparse import csr_matrix

    inc = csr_matrix(_pairs(n)[2] if signed else np.abs(_pairs(n)[2]))
    inc.sort_indices()
    return inc


SPARSE_FROM = 2**15
"""From this many pair values (fits × pairs) ``_by_model`` uses a sparse product (scipy's, imported then:
too slow an import for a command's one fit), below it numpy; or whenever scipy.sparse is loaded already."""


def _by_model(values: np.ndarray, n: int, signed: bool) -> np.ndarray:
    """(B, n) per-model sums of (B, pairs) pair values over each model's n - 1 pairs (times its sign in each
    when ``signed``): each fit's terms added one by one from zero, in pair order, whatever the batch (a dense
    BLAS product's order may change with the batch size, and a fit's sums with the fits beside it). Two
    ways to the same bits: a sparse product for big batches, a gather and a running sum for small ones."""
    import sys

    if values.size >= SPARSE_FROM or "scipy.sparse" in sys.modules:
        return np.asarray(_sparse_incidence(n, signed) @ values.T).T
    _, _, _, around, sign, _ = _pairs(n)
    got = values[:, around]
    if signed:
        got *= sign
    out = np.zeros(got.shape[:2])
    for k in range(got.shape[2]):
        out += got[:, :, k]
    return out

DEFAULT_CHUNK = 256
"""Fewest fits per Newton batch: keeps the (B, pairs) and (B, n, n) temporaries in cache."""

CHUNK_PAIRS = 2**16
"""Pairs per Newton batch (fits × n(n-1)/2) when that allows more than ``DEFAULT_CHUNK`` fits: with few
models a batch of 256 fits is mostly the per-call cost of its ~40 numpy operations an iteration (the
sensitivity curves' 9-model fits ran ~1.5x faster in batches of ~2,000)."""


def newton_chunk(n: int) -> int:
    """Fits per Newton batch for ``n`` models: ``CHUNK_PAIRS`` pairs, at least ``DEFAULT_CHUNK`` fits. A fit's
    result does not depend on the batch it is in."""
    return max(DEFAULT_CHUNK, CHUNK_PAIRS // max(1, n * (n - 1) // 2))

THREAD_PAIRS = 2**17
"""From this much work (fits × pairs) a foreground batch of Newton fits is split over two threads (numpy
releases the interpreter lock inside each operation on arrays this size): a 70-model board's 200 bootstrap
fits (483,000) take ~0.6 of the time on a 2-core machine. A fit's result does not depend on the batch it is
in, so the numbers do not change."""


def newton_threads(fits: int, n: int) -> int:
    """Threads ``fits`` Newton fits of ``n`` models merit: 2 for ``THREAD_PAIRS`` work or more on a machine of
    two cores or more, else 1 (``engine.rankers.bt.fit_bt_batch_info`` keeps background work to one of them
    until a page waits for it)."""
    import os

    if fits < 2 or fits * (n * (n - 1) // 2) < THREAD_PAIRS or (os.cpu_count() or 1) < 2:
        return 1
    return 2


SAFE_SPREAD = 1.5
"""A Newton step whose largest pairwise change max_i δ_i − min_i δ_i is at most this is accepted
without evaluating the likelihood: each pair term f(d) = log σ(d) has |f‴| ≤ |f″|, so along such
a step the likelihood rises by at least λ²(1 − φ(c)) with φ(c) = (e^c − c − 1)/c² < 1 for c < 1.79
(λ² = gᵀδ, the Newton decrement; Bach 2010, generalised self-concordance)."""

MAX_SPREAD = 8.0
"""A Newton step is shortened to this pairwise spread (far from the optimum, e.g. a poor warm
start, the quadratic model means little)."""

STEP_TOL = 1e-7
"""A fit whose Newton step is below this everywhere (in log-strength units, which do not depend on
the size of the counts) is done once the step is applied: quadratic convergence leaves an error of
order STEP_TOL²."""

GRAD_TOL = 1e-10
"""A fit is also done (after applying its step) when every model's gradient is below this share of
that model's own terms Σ_j (W~_ij σ(−d_ij) + W~_ji σ(d_ij)): the fit is then the exact optimum of
data changed by that relative amount, pair by pair. Measured per model, a pair with a tiny count
is judged on its own scale (a test against the total count passed wrong fits when some counts
were 1e9 times others)."""


def _ll_pairs(d: np.ndarray, e: np.ndarray, n_ij: np.ndarray, b: np.ndarray,
              work: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """BT log-likelihood from pair differences d, e = exp(-|d|), counts N_ij and the losses b = W~_ji.
    ``work``: two arrays of d's shape to compute in (``newton_batch``'s; the same numbers as without)."""
    t, u = (np.empty_like(d), np.empty_like(d)) if work is None else work
    np.negative(d, out=t)
    np.maximum(t, 0.0, out=t)
    np.log1p(e, out=u)
    t += u
    t *= n_ij
    np.multiply(b, d, out=u)
    return -row_sums(t) - row_sums(u)


def _ll_rows(rows: np.ndarray, d: np.ndarray, e: np.ndarray, n_ij: np.ndarray, b: np.ndarray,
             work: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``_ll_pairs`` of the ``rows`` of these fits: computed over every fit in ``work`` (two arrays of d's
    shape) when the rows are half of them or more, else over the rows gathered. A row's value is the same
    either way (each is summed on its own: ``row_sums``)."""
    if 2 * rows.size >= d.shape[0]:
        return _ll_pairs(d, e, n_ij, b, work)[rows]
    return _ll_pairs(d[rows], e[rows], n_ij[rows], b[rows])


def spd_solve(m: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve (B, n, n) symmetric positive definite systems for (B, n) right-hand sides.

    LAPACK's LU (``np.linalg.solve``), one call per matrix: each system's solution is the same bits
    whichever batch it is solved in, which a Cholesky with substitutions vectorised over the batch (this
    function until 0.20.3) was not (einsum's order of summation changes with the batch size), and it took
    as long or longer (9-model systems in batches of 101-4,096: 1.2-3x; 70 models: 1.4x; 200 models: 0.9x).
    """
    return np.linalg.solve(m, rhs[:, :, None])[:, :, 0]


def mle_spread_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B,) upper bound on the MLE's spread max θ − min θ, from the pair counts a = W~_ij and
    b = W~_ji (i < j, (B, pairs)) of strongly connected comparison digraphs.

    Cut the sorted MLE between two neighbours into an upper set S and the rest. The gradient summed
    over S is zero: Σ W~_ji σ(θ_i − θ_j) = Σ W~_ij σ(θ_j − θ_i) over i ∈ S, j ∉ S. Strong
    connectivity gives some W~_ji ≥ w_min there, and σ(θ_i − θ_j) ≥ 1/2, so the left side is at least
    w_min / 2; every term on the right is at most W~_ij e^(−gap). So each gap is at most
    log(2N / w_min) and the spread at most (n − 1) log(2N / w_min), with N the total count and
    w_min the smallest positive entry.
    """
    n = int(round((1 + np.sqrt(1 + 8 * a.shape[1])) / 2))
    w_min = np.minimum(np.min(a, axis=1, where=a > 0, initial=np.inf),
                       np.min(b, axis=1, where=b > 0, initial=np.inf))
    total = row_sums(a) + row_sums(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(w_min), (n - 1) * np.log(2.0 * total / w_min), 0.0)


def cold_rows(theta: np.ndarray, d: np.ndarray, e: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B,) rows whose start ``theta`` (with its pair differences d and e = exp(−|d|)) should be
    replaced by zeros: less likely than zeros, or spread more than twice ``mle_spread_bound`` (zeros
    are within the bound of the optimum, so a start further out would only cost capped steps)."""
    ll = _ll_pairs(d, e, a + b, b)
    ll0 = -np.log(2.0) * row_sums(a + b)
    spread = theta.max(axis=1) - theta.min(axis=1)
    return ~(ll >= ll0) | ~(spread <= 2.0 * mle_spread_bound(a, b))


def newton_batch(
    w: np.ndarray, tol: float = GRAD_TOL, max_iter: int = 200, theta0: np.ndarray | None = None,
) -> tuple[np.ndarray, int, np.ndarray]:
    """Safeguarded Newton on the BT log-likelihood for every (n, n) matrix of ``w`` at once.

    Returns (theta (B, n) mean-centred, iterations, converged (B,)). ``w`` must give an MLE (a
    strongly connected comparison digraph; ``regularise`` sees to it). ``theta0`` (B, n) is an
    optional warm start (e.g. a neighbouring fit); a row whose start is less likely than zeros, or
    spread more than twice ``mle_spread_bound``, starts from zeros instead (``cold_rows``). A row that has not
    met
    the stopping rule after ``max_iter`` iterations is returned as it stands with converged False.

    Works on the n(n-1)/2 pairs i < j only. Each iteration forms σ(d) and σ(−d) from exp(−|d|)
    (so tiny probabilities keep their relative precision) and from them the gradient and the
    Laplacian (the negative Hessian, made invertible by adding 1/n: the mean-zero constraint). The
    gradient sums to zero in exact arithmetic; its floating-point sum is put back on the models in
    proportion to their term sums (where the round-off is), so a model joined to the rest only by
    tiny counts is not pushed by the round-off of huge ones. Safeguard: a step within
    ``SAFE_SPREAD`` provably raises the likelihood and is taken as is; a longer one (capped at
    ``MAX_SPREAD``) is taken tentatively, and when the next iteration finds the likelihood lower it
    goes back half of it (backtracking; the objective is concave). Stopping rule, per fit: the
    Newton step is below ``STEP_TOL`` everywhere, or every model's gradient is below ``tol`` times
    its own term sum; the step is applied after the test (so the error is of order the squared
    step) and the fit leaves the batch (active-set compaction).
    """
    B, n, _ = w.shape
    i, j, inc_t, _, _, diag = _pairs(n)
    a, b = w[:, i, j], w[:, j, i]
    n_ij = a + b
    # N p (1 - p) floored: past |d| ≈ 745 it underflows and the Laplacian would be singular
    floor = 1e-15 * n_ij
    theta = (np.zeros((B, n)) if theta0 is None
             else row_centred(np.array(theta0, dtype=np.float64).reshape(B, n)))
    P = i.size
    # work arrays, reused every iteration (views of the first m rows while m fits remain): a fresh
    # (B, pairs) temporary per operation cost more in page faults than the arithmetic
    d_, e_, big_, small_, q_, p_, t_ = (np.empty((B, P)) for _ in range(7))
    pos_ = np.empty((B, P), dtype=bool)
    lap_ = np.empty((B, n * n))
    out = np.zeros((B, n))
    converged = np.zeros(B, dtype=bool)
    active = np.arange(B)
    pending = np.zeros(B, dtype=bool)  # rows standing on a tentative (long) step
    ll_base = np.full(B, -np.inf)  # likelihood where that step started
    step_prev = np.zeros((B, n))
    scale = np.ones(B)
    ones = np.full((n, n), 1.0 / n)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - iterations are reported
        m = active.size
        d, e, big, small, q, p, t, pos = (x[:m] for x in (d_, e_, big_, small_, q_, p_, t_, pos_))
        np.matmul(theta, inc_t, out=d)  # theta_i - theta_j per pair
        np.abs(d, out=e)
        np.negative(e, out=e)
        np.exp(e, out=e)  # e = exp(-|d|)
        if it == 1 and theta0 is not None:
            cold = cold_rows(theta, d, e, a, b)
            if cold.any():  # a far warm start: these rows start from zeros
                theta[cold] = 0.0
                d[cold] = 0.0
                e[cold] = 1.0
        np.add(e, 1.0, out=big)
        np.reciprocal(big, out=big)  # the larger of σ(d), σ(−d)
        np.multiply(e, big, out=small)  # the smaller one, exact to round-off however large |d|
        np.greater_equal(d, 0.0, out=pos)
        ok = np.ones(m, dtype=bool)
        if pending.any():
            rows = np.flatnonzero(pending)
            ll = _ll_rows(rows, d, e, n_ij, b, (q, p))  # q and p are made below
            worse = ll < ll_base[rows] - 1e-12 * np.abs(ll_base[rows])
            back = rows[worse]
            scale[back] *= 0.5  # go back half of the last step; checked again next iteration
            theta[back] -= scale[back, None] * step_prev[back]
            pending[rows[~worse]] = False
            ok[back] = False
        np.copyto(q, big)
        np.copyto(q, small, where=pos)  # σ(−d)
        np.copyto(p, small)
        np.copyto(p, big, where=pos)  # σ(d)
        np.multiply(q, a, out=q)  # W~_ij σ(−d): i's wins beyond the model's expectation...
        np.multiply(p, b, out=p)  # ... less W~_ji σ(d)
        np.subtract(q, p, out=t)
        grad = _by_model(t, n, signed=True)
        np.add(q, p, out=t)
        mass = _by_model(t, n, signed=False)  # each model's term sum: the scale of its gradient's round-off
        total = row_sums(mass)[:, None]
        grad -= row_sums(grad)[:, None] * (mass / np.maximum(total, 1e-300))
        c = np.multiply(big, small, out=t)
        np.multiply(c, n_ij, out=c)
        np.maximum(c, floor, out=c)  # N p (1 - p)
        lap = lap_[:m]
        lap[:, i * n + j] = c
        lap[:, j * n + i] = c
        np.negative(lap, out=lap)
        lap[:, diag] = _by_model(c, n, signed=False)
        lap = lap.reshape(m, n, n)
        lap += ones
        if ok.all():
            step = spd_solve(lap, grad)
        else:  # rows going back along their last step need no new one
            step = np.zeros_like(grad)
            step[ok] = spd_solve(lap[ok], grad[ok])
        spread = step.max(axis=1) - step.min(axis=1)
        step *= np.minimum(1.0, MAX_SPREAD / np.maximum(spread, 1e-300))[:, None]
        small_step = np.abs(step).max(axis=1) <= STEP_TOL
        flat = (np.abs(grad) <= tol * mass).all(axis=1)
        done = ok & (small_step | flat)
        long = ok & ~done & (spread > SAFE_SPREAD)
        if long.any():
            rows = np.flatnonzero(long)
            ll_base[rows] = _ll_rows(rows, d, e, n_ij, b, (q, p))  # q and p are read above
            pending[rows] = True
            step_prev[rows], scale[rows] = step[rows], 1.0
        theta[ok] += step[ok]
        if done.any():
            out[active[done]] = theta[done]
            converged[active[done]] = True
            keep = ~done
            active = active[keep]
            if active.size == 0:
                break
            a, b, n_ij, floor = a[keep], b[keep], n_ij[keep], floor[keep]
            theta, ll_base, step_prev, scale, pending = (
                theta[keep], ll_base[keep], step_prev[keep], scale[keep], pending[keep])
    if active.size:
        out[active] = theta
    return row_centred(out), it, converged


def mm_batch(
    w: np.ndarray, tol: float = 1e-10, max_iter: int = 100_000
) -> tuple[np.ndarray, int, np.ndarray]:
    """Hunter's MM iteration pi_i <- W~_i / sum_j N_ij / (pi_i + pi_j), batched; returns log-strengths."""
    B, n, _ = w.shape
    n_ij = w + w.swapaxes(1, 2)
    wins = w.sum(axis=2)
    pi = np.ones((B, n))
    converged = np.zeros(B, dtype=bool)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        denom = (n_ij / (pi[:, :, None] + pi[:, None, :])).sum(axis=2)
        new = wins / denom
        new /= np.exp(np.log(new).mean(axis=1, keepdims=True))
        delta = np.abs(np.log(new) - np.log(pi)).max(axis=1)
        pi = new
        converged = delta < tol
        if converged.all():
            break
    return centred(np.log(pi)), it, converged


DENSE_MODELS_MAX = 200
"""Up to this many models the count rankers use the dense batched kernels ((B, n, n) stacks, the
(pairs, n) incidence: fast for small n and for a bootstrap's many fits at once); above it, single fits
on the list of compared pairs (memory O(pairs + n), never O(n^2) or O(n^3): issue 23, bug 13)."""

CG_RTOL = 1e-12
"""Relative residual at which a sparse Newton system is taken as solved (conjugate gradients)."""


class PairLaplacian:
    """The weighted Laplacian of a fixed list of pairs (i, j), i != j, each pair once: its sparse pattern
    is built once, and ``solve`` puts new weights in and solves with them (a Newton fit changes the
    weights every iteration, never the pattern; rebuilding the matrix cost more than the solve)."""

    def __init__(self, n: int, i: np.ndarray, j: np.ndarray) -> None:
        from scipy.sparse import coo_matrix

        self.n, self.i, self.j = n, i, j
        k = i.size
        where = coo_matrix((np.arange(1.0, 2 * k + 1), (np.concatenate([i, j]), np.concatenate([j, i]))),
                           shape=(n, n)).tocsr()
        self.order = where.data.astype(np.int64) - 1  # which weight sits at each stored entry
        self.off = where

    def solve(self, c: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve (L + J/n) x = rhs, L the Laplacian with pair weights c > 0 and J the
        all-ones matrix (the mean-zero constraint that makes L invertible on a connected graph): the
        dense kernels' system, by Jacobi-preconditioned conjugate gradients, O(pairs + n) an iteration."""
        from scipy.sparse.linalg import LinearOperator, cg

        n = self.n
        deg = np.bincount(self.i, c, n) + np.bincount(self.j, c, n)
        self.off.data = np.concatenate([c, c])[self.order]
        off = self.off

        def matvec(x: np.ndarray) -> np.ndarray:
            x = np.ravel(x)
            return deg * x - off @ x + x.sum() / n

        op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        pre = LinearOperator((n, n), matvec=lambda x: np.ravel(x) / (deg + 1.0 / n), dtype=np.float64)
        x, _ = cg(op, rhs, rtol=CG_RTOL, atol=0.0, maxiter=max(1000, 10 * n), M=pre)
        return x


def newton_pairs(
    n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray, tol: float = GRAD_TOL,
    max_iter: int = 200, theta0: np.ndarray | None = None,
) -> tuple[np.ndarray, int, bool]:
    """``newton_batch`` for one fit on the compared pairs only: a = W~_ij, b = W~_ji for the pairs
    i < j with a + b > 0 (other pairs add nothing to the likelihood). Same safeguards (``SAFE_SPREAD``,
    ``MAX_SPREAD``, backtracking), stopping rule and gradient round-off correction as ``newton_batch``;
    the Newton system (Laplacian + J/n) is solved by conjugate gradients on the sparse Laplacian
    (``PairLaplacian``), so memory is O(pairs + n). Returns (theta (n,) mean-centred, iterations,
    converged). The comparison digraph must be strongly connected (an MLE exists). ``theta0`` (n,) is an
    optional warm start (a bootstrap resample starts from the point estimate), judged as in
    ``newton_batch``: a start less likely than zeros, or spread too far, starts from zeros instead."""
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n_ij = a + b
    floor = 1e-15 * n_ij
    theta = np.zeros(n)
    if theta0 is not None:
        start = centred(np.array(theta0, dtype=np.float64).reshape(1, n))
        d0 = start[0, i] - start[0, j]
        if not cold_rows(start, d0[None], np.exp(-np.abs(d0))[None], a[None], b[None])[0]:
            theta = start[0]
    pending, ll_base, scale = False, -np.inf, 1.0
    step_prev = np.zeros(n)
    converged, it = False, 0
    laplacian = PairLaplacian(n, i, j)

    def ll_of(d: np.ndarray, e: np.ndarray) -> float:
        return float(_ll_pairs(d[None], e[None], n_ij[None], b[None])[0])

    for it in range(1, max_iter + 1):  # noqa: B007 - iterations are reported
        d = theta[i] - theta[j]
        e = np.exp(-np.abs(d))
        if pending:
            ll = ll_of(d, e)
            if ll < ll_base - 1e-12 * abs(ll_base):
                scale *= 0.5  # go back half of the last step; checked again next iteration
                theta -= scale * step_prev
                continue
            pending = False
        big = 1.0 / (1.0 + e)
        small = e * big
        pos = d >= 0
        q = a * np.where(pos, small, big)  # W~_ij σ(−d)
        p = b * np.where(pos, big, small)  # W~_ji σ(d)
        t = q - p
        grad = np.bincount(i, t, n) - np.bincount(j, t, n)
        t = q + p
        mass = np.bincount(i, t, n) + np.bincount(j, t, n)
        grad -= grad.sum() * (mass / max(mass.sum(), 1e-300))
        c = np.maximum(big * small * n_ij, floor)
        step = laplacian.solve(c, grad)
        spread = step.max() - step.min()
        step *= min(1.0, MAX_SPREAD / max(spread, 1e-300))
        if np.abs(step).max() <= STEP_TOL or (np.abs(grad) <= tol * mass).all():
            theta += step
            converged = True
            break
        if spread > SAFE_SPREAD:
            ll_base, pending, step_prev, scale = ll_of(d, e), True, step, 1.0
        theta += step
    return centred(theta[None])[0], it, converged


def mm_pairs(
    n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray, tol: float = 1e-10,
    max_iter: int = 100_000,
) -> tuple[np.ndarray, int, bool]:
    """``mm_batch`` for one fit on the compared pairs only (a = W~_ij, b = W~_ji, i < j): Hunter's
    iteration with the sums over opponents taken by ``np.bincount``; returns (log-strengths, iterations,
    converged)."""
    n_ij = np.asarray(a, dtype=np.float64) + np.asarray(b, dtype=np.float64)
    wins = np.bincount(i, a, n) + np.bincount(j, b, n)
    pi = np.ones(n)
    converged, it = False, 0
    for it in range(1, max_iter + 1):  # noqa: B007
        r = n_ij / (pi[i] + pi[j])
        new = wins / (np.bincount(i, r, n) + np.bincount(j, r, n))
        new /= np.exp(np.log(new).mean())
        converged = bool(np.abs(np.log(new) - np.log(pi)).max() < tol)
        pi = new
        if converged:
            break
    return centred(np.log(pi)[None])[0], it, converged
