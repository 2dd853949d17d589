"""Davidson (1970) model with explicit ties (paper 000, Sections 2.2 and 3.2).

P(i > j) = pi_i / D, P(tie) = nu * sqrt(pi_i pi_j) / D with D = pi_i + pi_j + nu * sqrt(pi_i pi_j),
nu >= 0. Fitted by L-BFGS-B over (theta_1..theta_{n-1}, log nu) with the last log-strength fixed
at 0 (as in paper 000, Appendix A.2) and an analytic gradient; nu's box is log nu >= log 1e-12.
Scores are mean-centred natural-log strengths (geometric mean of pi equal to one); ``nu`` is reported.

When does the maximum-likelihood estimate exist? Each pair outcome is a three-way multinomial logit
with utilities theta_i (i wins), theta_j (j wins), phi + (theta_i + theta_j) / 2 (tie), phi = log nu,
so the log-likelihood is concave and the MLE is finite exactly when no non-zero direction
(d_theta mod a common shift, d_phi) leaves every observed outcome at least as likely and one more
likely (no separation). For a strict win i > j that reads d_i - d_j >= max(0, 2 d_phi); for a tie
2 d_phi >= |d_i - d_j|. Consequences, used by ``mle_exists_batch``:

- no tie at all: nu's MLE is 0 (the box's lower bound, reported) and theta is the plain BT MLE, which
  exists iff the strict-win digraph is strongly connected;
- ties present and the strict-win digraph strongly connected: every direction has d_theta constant,
  then wins force d_phi <= 0 and ties d_phi >= 0, so the MLE exists. Ties alone do not bound theta:
  "a beats b 3 times, ties once" diverges along d_a - d_b = 2 d_phi (nu grows with the gap);
- ties present, strict-win digraph not strongly connected: the MLE may still exist (a <-> b and
  c <-> d by strict wins, a ~ c tied); decided exactly by a small linear programme (maximise the total
  slack of those inequalities in a box; positive = separation), plus connectivity of the pairs.

Without an MLE the fit adds ``alpha / 2`` virtual wins each way to every pair of models (as the BT
ranker does), which makes the strict-win digraph complete, and says so in ``details``;
``on_degenerate="raise"`` refuses instead. A fit whose result is not finite, not converged, or has a
strength gap above ``THETA_GAP_MAX`` or nu above ``NU_MAX`` is flagged
``converged = False`` with the reason in ``details["convergence"]``. (With the existence check in
front, divergence is not expected; the flag guards against optimiser failure.)
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.graphs.reachability import strongly_connected_batch
from engine.graphs.stack import GraphStack
from engine.rankers.base import (
    RankResult,
    centred,
    check_stack,
    register,
    series,
    single_thread_blas,
)
from engine.rankers.bt import (
    DEFAULT_ALPHA,
    complete_pairs,
    fit_bt_pairs_info,
    strongly_connected_pairs,
)
from engine.rankers.bt_solvers import DENSE_MODELS_MAX
from engine.rankers.elo_scale import to_elo_scale

NU_MIN = 1e-12
THETA_GAP_MAX = 50.0
"""A log-strength gap above this (odds e^50) only arises from a diverging fit: flagged."""
NU_MAX = 1e9
"""A tie parameter above this only arises from a diverging fit (the audit's runaway fits reached 1e10):
flagged."""


def pair_counts_of(
    W: np.ndarray, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dense (n, n) wins W and symmetric ties T → the compared pairs (i < j, W_ij, W_ji, T_ij)."""
    W = np.asarray(W, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    i, j = np.nonzero(np.triu((W + W.T + T) > 0, 1))
    return i.astype(np.int64), j.astype(np.int64), W[i, j], W[j, i], T[i, j]


def davidson_negloglik_pairs(
    params: np.ndarray, i: np.ndarray, j: np.ndarray, w_ij: np.ndarray, w_ji: np.ndarray, t_ij: np.ndarray
) -> tuple[float, np.ndarray]:
    """Negative Davidson log-likelihood and its gradient from the compared pairs (i < j with W_ij, W_ji,
    T_ij): params = (theta_0..theta_{n-2}, log nu), theta_{n-1} = 0. O(pairs + n) per evaluation."""
    n = params.size
    theta = np.append(params[:-1], 0.0)
    nu = float(np.exp(params[-1]))
    d = theta[i] - theta[j]
    n_ij = w_ij + w_ji + t_ij
    ch = 2.0 * np.cosh(0.5 * d) + nu
    t_tot = t_ij.sum()
    ll = 0.5 * ((w_ij - w_ji) * d).sum() + t_tot * np.log(nu) - (n_ij * np.log(ch)).sum()
    per_pair = 0.5 * (w_ij - w_ji) - n_ij * np.sinh(0.5 * d) / ch  # d ll / d theta_i (minus for theta_j)
    g_theta = np.bincount(i, per_pair, n) - np.bincount(j, per_pair, n)
    g_phi = t_tot - nu * (n_ij / ch).sum()
    grad = np.append(g_theta[:-1], g_phi)
    return -float(ll), -grad


def davidson_negloglik(params: np.ndarray, W: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative Davidson log-likelihood and its gradient; params = (theta_0..theta_{n-2}, log nu)."""
    return davidson_negloglik_pairs(params, *pair_counts_of(W, T))


def separating_direction(W: np.ndarray, T: np.ndarray) -> np.ndarray | None:
    """``separating_direction_pairs`` on dense (n, n) wins W and symmetric ties T."""
    return separating_direction_pairs(np.asarray(W).shape[0], *pair_counts_of(W, T))


def separating_direction_pairs(
    n: int, i: np.ndarray, j: np.ndarray, w_ij: np.ndarray, w_ji: np.ndarray, t_ij: np.ndarray
) -> np.ndarray | None:
    """A direction (d_theta (n), d_phi) along which the Davidson likelihood keeps rising, or None.

    Solves max sum of slacks of the no-separation inequalities (see the module docstring) over the
    box [-1, 1] with sum(d_theta) = 0; a positive optimum is a separating direction. Returns None when
    the MLE exists (the pairs' comparison graph must also be connected; checked by the caller). The
    constraint matrix is sparse (two or three entries a row), so its size follows the pairs, not n^2.
    """
    from scipy.sparse import coo_matrix

    # strict wins, winner u over loser v: d_v - d_u <= 0 and 2 d_phi - (d_u - d_v) <= 0
    win = w_ij > 0
    lose = w_ji > 0
    u = np.concatenate([i[win], j[lose]])
    v = np.concatenate([j[win], i[lose]])
    ti, tj = i[t_ij > 0], j[t_ij > 0]  # ties: +-(d_i - d_j) - 2 d_phi <= 0
    k_w, k_t = u.size, ti.size
    if k_w + k_t == 0:
        return None
    rows_w = np.arange(k_w)
    rows, cols, vals = [], [], []
    for r, c, x in ((rows_w, v, 1.0), (rows_w, u, -1.0),  # first inequality of each win
                    (k_w + rows_w, u, -1.0), (k_w + rows_w, v, 1.0), (k_w + rows_w, None, 2.0)):
        rows.append(r)
        cols.append(np.full(r.size, n) if c is None else c)
        vals.append(np.full(r.size, x))
    rows_t = 2 * k_w + np.arange(k_t)
    for r, c, x in ((rows_t, ti, 1.0), (rows_t, tj, -1.0), (rows_t, None, -2.0),
                    (k_t + rows_t, ti, -1.0), (k_t + rows_t, tj, 1.0), (k_t + rows_t, None, -2.0)):
        rows.append(r)
        cols.append(np.full(r.size, n) if c is None else c)
        vals.append(np.full(r.size, x))
    m = 2 * (k_w + k_t)
    A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(m, n + 1)).tocsr()
    c = np.asarray(A.sum(axis=0)).ravel()  # minimise sum of (A x) = maximise the total slack -sum(A x)
    a_eq = np.append(np.ones(n), 0.0)[None]
    from scipy.optimize import linprog  # here, not at import: scipy.optimize costs ~1 s to load

    res = linprog(c, A_ub=A, b_ub=np.zeros(m), A_eq=a_eq, b_eq=[0.0], bounds=[(-1.0, 1.0)] * (n + 1),
                  method="highs")
    if res.status != 0:  # pragma: no cover - the zero vector is always feasible and the box bounds it
        raise RuntimeError(f"Davidson existence check failed: {res.message}")
    return res.x if -res.fun > 1e-9 else None


def _connected(W: np.ndarray, T: np.ndarray) -> bool:
    n = W.shape[0]
    pair = (W + W.T + T) > 0
    return bool(strongly_connected_batch((pair & ~np.eye(n, dtype=bool))[None])[0])


def mle_exists_pairs(
    n: int, i: np.ndarray, j: np.ndarray, w_ij: np.ndarray, w_ji: np.ndarray, t_ij: np.ndarray
) -> bool:
    """``mle_exists`` from the compared pairs (i < j with W_ij, W_ji, T_ij), in O(pairs + n) memory
    (strong components by scipy; the linear programme only when ties may bind what wins do not)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if strongly_connected_pairs(n, i, j, w_ij, w_ji):
        return True
    if not (t_ij > 0).any():
        return False
    pairs = coo_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    if connected_components(pairs, directed=False, return_labels=False) != 1:
        return False
    return separating_direction_pairs(n, i, j, w_ij, w_ji, t_ij) is None


def mle_exists_batch(W: np.ndarray, T: np.ndarray) -> np.ndarray:
    """(B, n, n) wins and symmetric ties → (B,) bool: does the Davidson MLE exist (see module docstring)?

    Fast path: strict-win digraph strongly connected. Otherwise, with ties, the exact linear programme;
    its answer depends only on which pairs have wins / ties, so it runs once per distinct pattern.
    """
    W = np.asarray(W, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    B, n, _ = W.shape
    off = ~np.eye(n, dtype=bool)
    ok = strongly_connected_batch((W > 0) & off)
    has_tie = (T * off).sum(axis=(1, 2)) > 0
    todo = np.flatnonzero(~ok & has_tie)
    if todo.size:
        pattern = np.concatenate(
            [(W[todo] > 0).reshape(todo.size, -1), (T[todo] > 0).reshape(todo.size, -1)], axis=1
        )
        uniq, inverse = np.unique(pattern, axis=0, return_inverse=True)
        answer = np.empty(len(uniq), dtype=bool)
        for k, row in enumerate(uniq):
            w = row[: n * n].reshape(n, n).astype(np.float64)
            t = row[n * n:].reshape(n, n).astype(np.float64)
            answer[k] = _connected(w, t) and separating_direction(w, t) is None
        ok[todo] = answer[np.asarray(inverse).reshape(-1)]
    return ok


def mle_exists(W: np.ndarray, T: np.ndarray) -> bool:
    """Single-data-set form of ``mle_exists_batch`` (on the compared pairs: ``mle_exists_pairs``)."""
    return mle_exists_pairs(np.asarray(W).shape[0], *pair_counts_of(W, T))


def virtual_wins(n: int, alpha: float) -> np.ndarray:
    """alpha / 2 virtual wins each way on every pair (the stated regularisation)."""
    return (alpha / 2.0) * (~np.eye(n, dtype=bool))


def regularisation_note(alpha: float) -> str:
    """The sentence a table carries when the Davidson fit needed ``alpha`` virtual comparisons per pair."""
    return (
        "the Davidson MLE does not exist (strict wins and ties leave some model's strength or nu unbounded); "
        f"added {alpha / 2:g} virtual win(s) each way to every pair of models ({alpha:g} virtual comparisons "
        "per pair)"
    )


def divergence(theta: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """(B,) bool: a fit that is not finite, has a strength gap > THETA_GAP_MAX or nu > NU_MAX."""
    theta = np.atleast_2d(theta)
    gap = theta.max(axis=1) - theta.min(axis=1)
    finite = np.isfinite(theta).all(axis=1) & np.isfinite(nu)
    return ~finite | (gap > THETA_GAP_MAX) | (np.asarray(nu) > NU_MAX)


def fit_davidson(
    W: np.ndarray,
    T: np.ndarray,
    models: tuple[str, ...] | list[str] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    scale: str = "log",
    tol: float = 1e-10,
) -> RankResult:
    """Single Davidson fit on wins W and ties T (both (n, n); T symmetric)."""
    n = np.asarray(W).shape[0]
    return fit_davidson_on_pairs(n, *pair_counts_of(W, T), models, alpha=alpha, on_degenerate=on_degenerate,
                                 scale=scale, tol=tol)


def fit_davidson_pairs(pc, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize",
                       scale: str = "log", tol: float = 1e-10,
                       start: tuple[np.ndarray, float] | None = None) -> RankResult:
    """Single Davidson fit on vote pair counts (``engine.rankers.votes.PairCounts``), never densified
    (``start``: a warm start, as ``fit_davidson_on_pairs``)."""
    return fit_davidson_on_pairs(pc.n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties, pc.models, alpha=alpha,
                                 on_degenerate=on_degenerate, scale=scale, tol=tol, start=start)


def fit_davidson_on_pairs(
    n: int,
    i: np.ndarray,
    j: np.ndarray,
    w_ij: np.ndarray,
    w_ji: np.ndarray,
    t_ij: np.ndarray,
    models: tuple[str, ...] | list[str] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
    scale: str = "log",
    tol: float = 1e-10,
    start: tuple[np.ndarray, float] | None = None,
) -> RankResult:
    """Single Davidson fit from the compared pairs (i < j with wins W_ij, W_ji and ties T_ij): existence
    check, regularisation, BT warm start and L-BFGS-B, each O(pairs + n) in memory. ``start`` (theta on
    the log scale, nu): a warm start in place of the BT fit (a bootstrap resample starts from the point
    estimate)."""
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    w_ij, w_ji, t_ij = (np.asarray(x, dtype=np.float64) for x in (w_ij, w_ji, t_ij))
    models = tuple(models) if models is not None else tuple(str(k) for k in range(n))
    if scale not in ("log", "elo"):
        raise LensError(f"Unknown Davidson scale {scale!r}; choose log or elo.")
    ok = mle_exists_pairs(n, i, j, w_ij, w_ji, t_ij)
    note = "none (the MLE exists)"
    if not ok:
        if on_degenerate == "raise":
            raise LensError(
                "The Davidson maximum-likelihood estimate does not exist for this selection: some model "
                "never "
                "loses (or never wins) a strict comparison, or some groups of models were never compared."
            )
        if alpha <= 0:
            raise LensError("Davidson regularisation alpha must be positive when the MLE does not exist.")
        i, j, (w_ij, w_ji, t_ij) = complete_pairs(n, i, j, w_ij, w_ji, t_ij, ranker="Davidson")
        w_ij, w_ji = w_ij + alpha / 2.0, w_ji + alpha / 2.0
        note = regularisation_note(alpha)
    n_tot = (w_ij + w_ji + t_ij).sum()
    t_tot = t_ij.sum()
    from scipy.optimize import minimize  # loaded only when a Davidson fit runs

    with single_thread_blas():
        if start is None:
            theta0 = fit_bt_pairs_info(n, i, j, w_ij + 0.5 * t_ij, w_ji + 0.5 * t_ij, alpha=alpha).scores[0]
            nu0 = max(t_tot, 0.5) / max(n_tot - t_tot, 0.5)
        else:
            theta0, nu0 = np.asarray(start[0], dtype=np.float64), float(start[1])
        if n > DENSE_MODELS_MAX:  # many models: Newton with conjugate-gradient solves (L-BFGS-B crawls)
            theta, nu, nit, success = newton_davidson_pairs(n, i, j, w_ij, w_ji, t_ij, theta0=theta0,
                                                            phi0=np.log(max(nu0, 1e-3)), tol=tol)
            solver = "damped Newton on (theta, log nu) over the compared pairs (conjugate-gradient solves)"
            message = "converged" if success else "iteration limit reached"
            phi_hat = float(np.log(nu))
            fun = -_dav_loglik_pairs(theta, phi_hat, i, j, w_ij, w_ji, t_ij)
        else:
            x0 = np.append(theta0[:-1] - theta0[-1], np.log(max(nu0, 1e-3)))
            bounds = [(None, None)] * (n - 1) + [(np.log(NU_MIN), None)]
            opt = minimize(
                davidson_negloglik_pairs, x0, args=(i, j, w_ij, w_ji, t_ij), jac=True, method="L-BFGS-B",
                bounds=bounds, options={"maxiter": 5000, "gtol": tol * max(n_tot, 1.0), "ftol": 1e-15},
            )
            theta = centred(np.append(opt.x[:-1], 0.0))
            nu, nit, success = float(np.exp(opt.x[-1])), int(opt.nit), bool(opt.success)
            message = str(opt.message)
            solver = "L-BFGS-B on (theta, log nu), last theta fixed at 0 then mean-centred"
            phi_hat, fun = float(opt.x[-1]), float(opt.fun)
    diverged = bool(divergence(theta[None], np.array([nu]))[0])
    converged = success and not diverged
    if diverged:
        convergence = (f"diverging fit (strength gap {theta.max() - theta.min():.3g}, nu {nu:.3g}); "
                       "the scores are not a usable estimate")
    elif not success:
        convergence = f"the optimiser stopped without converging ({message})"
    else:
        convergence = "converged"
    if scale == "elo":
        theta = to_elo_scale(theta)
    details = {
        "model": "Davidson (explicit ties)",
        "solver": solver,
        "iterations": int(nit),
        "converged": converged,
        "convergence": convergence,
        "message": message,
        "nu": nu,
        "nu_at_lower_bound": bool(phi_hat <= np.log(NU_MIN) + 1e-9),
        "loglik": -fun,
        "regularisation": note,
        "alpha": 0.0 if ok else alpha,
        "scale": "natural log strength" if scale == "log" else "Elo-like (1000 + 400 * log10 strength)",
    }
    return RankResult("davidson", series(models, theta), details)


@register("davidson", "Davidson model with explicit ties (reports nu)")
def davidson(
    stack: GraphStack, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize", scale: str = "log"
) -> RankResult:
    """Davidson strengths with an explicit tie parameter nu, fitted on the stack's summed W and T."""
    check_stack(stack, "davidson")
    W, T = stack.win_tie_matrices()
    return fit_davidson(W, T, stack.models, alpha=alpha, on_degenerate=on_degenerate, scale=scale)


def _dav_loglik(theta: np.ndarray, phi: np.ndarray, W: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Batched Davidson log-likelihood (B,) up to a constant; each pair counted once."""
    d = theta[:, :, None] - theta[:, None, :]
    n_ij = W + W.swapaxes(1, 2) + T
    nu = np.exp(phi)[:, None, None]
    t_tot = 0.5 * T.sum(axis=(1, 2))
    return (
        0.5 * (W * d).sum(axis=(1, 2))
        + t_tot * phi
        - 0.5 * (n_ij * np.log(2 * np.cosh(0.5 * d) + nu)).sum(axis=(1, 2))
    )


def fit_davidson_batch(
    W: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Davidson fits for B data sets at once by damped Newton on (theta, log nu).

    ``W``, ``T``: (B, n, n) wins and symmetric ties, each giving an MLE (``mle_exists_batch``; the
    caller regularises those that do not). Returns (theta (B, n) mean-centred, nu (B,), converged
    (B,)); ``converged`` is False where the gradient test failed within ``max_iter`` or the fit
    diverged (``divergence``). Where the Newton direction is not an ascent direction the step falls
    back to the gradient; backtracking keeps the likelihood rising; log nu stays >= log 1e-12.
    """
    W = np.asarray(W, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    B, n, _ = W.shape
    n_ij = W + W.swapaxes(1, 2) + T
    total = np.maximum(0.5 * n_ij.sum(axis=(1, 2)), 1.0)
    t_tot = 0.5 * T.sum(axis=(1, 2))
    net = 0.5 * (W.sum(axis=2) - W.sum(axis=1))
    theta = np.zeros((B, n))
    phi = np.log(np.maximum(t_tot, 0.5) / np.maximum(total - t_tot, 0.5))
    lo = np.log(NU_MIN)
    phi = np.maximum(phi, lo)
    ones = np.full((n, n), 1.0 / n)
    idx = np.arange(n)
    ll = _dav_loglik(theta, phi, W, T)
    converged = np.zeros(B, dtype=bool)
    for _ in range(max_iter):
        d = theta[:, :, None] - theta[:, None, :]
        nu = np.exp(phi)
        s, c = np.sinh(0.5 * d), np.cosh(0.5 * d)
        D = 2 * c + nu[:, None, None]
        g_t = net - (n_ij * s / D).sum(axis=2)
        g_p = t_tot - nu * 0.5 * (n_ij / D).sum(axis=(1, 2))
        at_bound = (phi <= lo + 1e-12) & (g_p < 0)
        g_p = np.where(at_bound, 0.0, g_p)
        gnorm = np.maximum(np.abs(g_t).max(axis=1), np.abs(g_p))
        converged = gnorm <= tol * total
        if converged.all():
            break
        f2 = (0.5 * c * D - s * s) / D**2
        lap = -(n_ij * f2)
        lap[:, idx, idx] = (n_ij * f2).sum(axis=2)
        # negative Hessian, theta block made invertible by the mean constraint
        H = np.zeros((B, n + 1, n + 1))
        H[:, :n, :n] = lap + ones
        cross = -(n_ij * s * nu[:, None, None] / D**2).sum(axis=2)
        H[:, :n, n] = cross
        H[:, n, :n] = cross
        H[:, n, n] = nu * 0.5 * (n_ij / D).sum(axis=(1, 2)) - nu**2 * 0.5 * (n_ij / D**2).sum(axis=(1, 2))
        H[at_bound, n, :] = 0.0
        H[at_bound, :, n] = 0.0
        H[at_bound, n, n] = 1.0
        g = np.concatenate([g_t, g_p[:, None]], axis=1)
        try:
            step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = g.copy()
        ascent = (step * g).sum(axis=1) > 0
        step[~ascent] = g[~ascent] / np.maximum(total[~ascent, None], 1.0)
        step[converged] = 0.0
        scale = np.ones(B)
        for _ in range(40):
            th_c = theta + scale[:, None] * step[:, :n]
            ph_c = np.maximum(phi + scale * step[:, n], lo)
            ll_c = _dav_loglik(th_c, ph_c, W, T)
            worse = (ll_c < ll - 1e-12 * np.abs(ll)) & ~converged
            if not worse.any():
                break
            scale[worse] *= 0.5
        theta = th_c - th_c.mean(axis=1, keepdims=True)
        phi = ph_c
        ll = ll_c
    nu = np.exp(phi)
    converged = converged & ~divergence(theta, nu)
    return theta, nu, converged


def _dav_loglik_pairs(theta: np.ndarray, phi: float, i: np.ndarray, j: np.ndarray, w_ij: np.ndarray,
                      w_ji: np.ndarray, t_ij: np.ndarray) -> float:
    """Davidson log-likelihood (up to a constant) of full log-strengths ``theta`` and phi = log nu."""
    d = theta[i] - theta[j]
    ch = 2.0 * np.cosh(0.5 * d) + np.exp(phi)
    return float(0.5 * ((w_ij - w_ji) * d).sum() + t_ij.sum() * phi
                 - ((w_ij + w_ji + t_ij) * np.log(ch)).sum())


def newton_davidson_pairs(
    n: int, i: np.ndarray, j: np.ndarray, w_ij: np.ndarray, w_ji: np.ndarray, t_ij: np.ndarray, *,
    phi0: float, tol: float = 1e-10, max_iter: int = 200, theta0: np.ndarray | None = None,
) -> tuple[np.ndarray, float, int, bool]:
    """One Davidson fit by damped Newton on (theta, log nu) from the compared pairs, O(pairs + n) memory:
    ``fit_davidson_batch``'s method for many models. The negative Hessian is [[L + J/n, x], [x^T, h]]
    with L the Laplacian of the pair weights N_ij (1 + nu cosh(d/2) / 2) / D^2 (the mean constraint
    makes it invertible); it is solved through its Schur complement with two conjugate-gradient solves
    (``PairLaplacian``). Backtracking keeps the likelihood rising; log nu stays >= log NU_MIN.
    Returns (theta mean-centred, nu, iterations, converged: every gradient entry <= tol * N)."""
    from engine.rankers.bt_solvers import PairLaplacian

    n_ij = w_ij + w_ji + t_ij
    total = max(float(n_ij.sum()), 1.0)
    t_tot = float(t_ij.sum())
    net = 0.5 * (w_ij - w_ji)
    lo = np.log(NU_MIN)
    theta = np.zeros(n) if theta0 is None else centred(np.asarray(theta0, dtype=np.float64))
    phi = max(float(phi0), lo)
    ll = _dav_loglik_pairs(theta, phi, i, j, w_ij, w_ji, t_ij)
    converged, it = False, 0
    laplacian = PairLaplacian(n, i, j)
    for it in range(1, max_iter + 1):  # noqa: B007 - iterations are reported
        d = theta[i] - theta[j]
        nu = np.exp(phi)
        s, c = np.sinh(0.5 * d), np.cosh(0.5 * d)
        D = 2.0 * c + nu
        per_pair = net - n_ij * s / D
        g_t = np.bincount(i, per_pair, n) - np.bincount(j, per_pair, n)
        g_p = t_tot - nu * float((n_ij / D).sum())
        at_bound = phi <= lo + 1e-12 and g_p < 0
        if at_bound:
            g_p = 0.0
        if max(np.abs(g_t).max(initial=0.0), abs(g_p)) <= tol * total:
            converged = True
            break
        weight = n_ij * (0.5 * c * D - s * s) / D**2
        y1 = laplacian.solve(weight, g_t)
        if at_bound:
            step_t, step_p = y1, 0.0
        else:
            xs = n_ij * s * nu / D**2
            x = -(np.bincount(i, xs, n) - np.bincount(j, xs, n))
            h = nu * float((n_ij / D).sum()) - nu**2 * float((n_ij / D**2).sum())
            y2 = laplacian.solve(weight, x)
            schur = h - float(x @ y2)
            step_p = (g_p - float(x @ y1)) / schur if schur > 0 else g_p / total
            step_t = y1 - y2 * step_p
        if float(step_t @ g_t) + step_p * g_p <= 0:  # not an ascent direction: the gradient instead
            step_t, step_p = g_t / total, g_p / total
        scale = 1.0
        for _ in range(40):
            th_c = theta + scale * step_t
            ph_c = max(phi + scale * step_p, lo)
            ll_c = _dav_loglik_pairs(th_c, ph_c, i, j, w_ij, w_ji, t_ij)
            if ll_c >= ll - 1e-12 * abs(ll):
                break
            scale *= 0.5
        theta, phi, ll = th_c - th_c.mean(), ph_c, ll_c
    return theta, float(np.exp(phi)), it, converged


def fit_davidson_stack_batch(
    W: np.ndarray, T: np.ndarray, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Batched Davidson with the single fit's existence check and regularisation.

    Returns (theta (B, n), nu (B,), converged (B,), regularised (B,)); resamples without an MLE get
    the same alpha / 2 virtual wins each way as ``fit_davidson``.
    """
    W = np.asarray(W, dtype=np.float64).copy()
    T = np.asarray(T, dtype=np.float64)
    n = W.shape[1]
    if n > DENSE_MODELS_MAX:  # many models: each fit on its pairs (a dense Newton step is O(B n^3))
        fits = [fit_davidson(w, t, alpha=alpha, on_degenerate=on_degenerate)
                for w, t in zip(W, T, strict=True)]
        theta = np.array([f.scores.to_numpy(np.float64) for f in fits]).reshape(len(fits), n)
        return (theta, np.array([f.details["nu"] for f in fits]),
                np.array([f.details["converged"] for f in fits], dtype=bool),
                np.array([f.details["alpha"] > 0 for f in fits], dtype=bool))
    bad = ~mle_exists_batch(W, T)
    if bad.any():
        if on_degenerate == "raise":
            raise LensError(
                "The Davidson maximum-likelihood estimate does not exist for some bootstrap resample "
                "of this selection."
            )
        W[bad] += virtual_wins(n, alpha)
    with single_thread_blas():
        theta, nu, conv = fit_davidson_batch(W, T)
    return theta, nu, conv, bad
