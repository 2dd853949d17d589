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
from engine.rankers.bt import DEFAULT_ALPHA, ELO_FACTOR, fit_bt_batch

NU_MIN = 1e-12
THETA_GAP_MAX = 50.0
"""A log-strength gap above this (odds e^50) only arises from a diverging fit: flagged."""
NU_MAX = 1e9
"""A tie parameter above this only arises from a diverging fit (the audit's runaway fits reached 1e10):
flagged."""


def davidson_negloglik(params: np.ndarray, W: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative Davidson log-likelihood and its gradient; params = (theta_0..theta_{n-2}, log nu)."""
    n = W.shape[0]
    theta = np.append(params[:-1], 0.0)
    nu = float(np.exp(params[-1]))
    d = theta[:, None] - theta[None, :]
    n_ij = W + W.T + T
    ch = 2.0 * np.cosh(0.5 * d) + nu
    iu = np.triu_indices(n, 1)
    t_tot = T[iu].sum()
    ll = 0.5 * (W * d).sum()  # sum over i != j of W_ij (theta_i - theta_j) / 2
    ll += t_tot * np.log(nu) - (n_ij[iu] * np.log(ch[iu])).sum()
    g_theta = 0.5 * (W.sum(axis=1) - W.sum(axis=0)) - (n_ij * np.sinh(0.5 * d) / ch).sum(axis=1)
    g_phi = t_tot - nu * (n_ij[iu] / ch[iu]).sum()
    grad = np.append(g_theta[:-1], g_phi)
    return -float(ll), -grad


def separating_direction(W: np.ndarray, T: np.ndarray) -> np.ndarray | None:
    """A direction (d_theta (n), d_phi) along which the Davidson likelihood keeps rising, or None.

    Solves max sum of slacks of the no-separation inequalities (see the module docstring) over the
    box [-1, 1] with sum(d_theta) = 0; a positive optimum is a separating direction. Returns None when
    the MLE exists (the pairs' comparison graph must also be connected; checked by the caller).
    """
    W = np.asarray(W, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    n = W.shape[0]
    rows = []
    for i, j in zip(*np.nonzero(W > 0), strict=True):
        if i == j:
            continue
        r1 = np.zeros(n + 1)
        r1[j], r1[i] = 1.0, -1.0  # d_j - d_i <= 0
        r2 = np.zeros(n + 1)
        r2[i], r2[j], r2[n] = -1.0, 1.0, 2.0  # 2 d_phi - (d_i - d_j) <= 0
        rows += [r1, r2]
    for i, j in zip(*np.nonzero(np.triu(T > 0, 1)), strict=True):
        r1 = np.zeros(n + 1)
        r1[i], r1[j], r1[n] = 1.0, -1.0, -2.0  # (d_i - d_j) - 2 d_phi <= 0
        r2 = np.zeros(n + 1)
        r2[i], r2[j], r2[n] = -1.0, 1.0, -2.0
        rows += [r1, r2]
    if not rows:
        return None
    A = np.vstack(rows)
    c = A.sum(axis=0)  # minimise sum of (A x) = maximise the total slack -sum(A x)
    a_eq = np.append(np.ones(n), 0.0)[None]
    from scipy.optimize import linprog  # here, not at import: scipy.optimize costs ~1 s to load

    res = linprog(c, A_ub=A, b_ub=np.zeros(len(A)), A_eq=a_eq, b_eq=[0.0], bounds=[(-1.0, 1.0)] * (n + 1),
                  method="highs")
    if res.status != 0:  # pragma: no cover - the zero vector is always feasible and the box bounds it
        raise RuntimeError(f"Davidson existence check failed: {res.message}")
    return res.x if -res.fun > 1e-9 else None


def _connected(W: np.ndarray, T: np.ndarray) -> bool:
    n = W.shape[0]
    pair = (W + W.T + T) > 0
    return bool(strongly_connected_batch((pair & ~np.eye(n, dtype=bool))[None])[0])


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
    """Single-data-set form of ``mle_exists_batch``."""
    return bool(
        mle_exists_batch(np.asarray(W, dtype=np.float64)[None], np.asarray(T, dtype=np.float64)[None])[0]
    )


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
    W = np.asarray(W, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    n = W.shape[0]
    models = tuple(models) if models is not None else tuple(str(i) for i in range(n))
    if scale not in ("log", "elo"):
        raise LensError(f"Unknown Davidson scale {scale!r}; choose log or elo.")
    ok = mle_exists(W, T)
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
        W = W + virtual_wins(n, alpha)
        note = regularisation_note(alpha)
    iu = np.triu_indices(n, 1)
    n_tot = (W + W.T + T)[iu].sum()
    from scipy.optimize import minimize  # loaded only when a Davidson fit runs

    with single_thread_blas():
        theta0 = fit_bt_batch((W + 0.5 * T)[None], alpha=alpha)[0]
        nu0 = max(T[iu].sum(), 0.5) / max(n_tot - T[iu].sum(), 0.5)
        x0 = np.append(theta0[:-1] - theta0[-1], np.log(max(nu0, 1e-3)))
        bounds = [(None, None)] * (n - 1) + [(np.log(NU_MIN), None)]
        opt = minimize(
            davidson_negloglik, x0, args=(W, T), jac=True, method="L-BFGS-B", bounds=bounds,
            options={"maxiter": 5000, "gtol": tol * max(n_tot, 1.0), "ftol": 1e-15},
        )
    theta = centred(np.append(opt.x[:-1], 0.0))
    nu = float(np.exp(opt.x[-1]))
    diverged = bool(divergence(theta[None], np.array([nu]))[0])
    converged = bool(opt.success) and not diverged
    if diverged:
        convergence = (f"diverging fit (strength gap {theta.max() - theta.min():.3g}, nu {nu:.3g}); "
                       "the scores are not a usable estimate")
    elif not opt.success:
        convergence = f"the optimiser stopped without converging ({opt.message})"
    else:
        convergence = "converged"
    if scale == "elo":
        theta = theta * ELO_FACTOR
    details = {
        "model": "Davidson (explicit ties)",
        "solver": "L-BFGS-B on (theta, log nu), last theta fixed at 0 then mean-centred",
        "iterations": int(opt.nit),
        "converged": converged,
        "convergence": convergence,
        "message": str(opt.message),
        "nu": nu,
        "nu_at_lower_bound": bool(opt.x[-1] <= np.log(NU_MIN) + 1e-9),
        "loglik": -float(opt.fun),
        "regularisation": note,
        "alpha": 0.0 if ok else alpha,
        "scale": "natural log strength" if scale == "log" else "Elo (400 * log10 strength)",
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
