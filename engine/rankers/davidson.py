"""Davidson (1970) model with explicit ties (paper 000, Section 3.3).

P(i > j) = pi_i / D, P(tie) = nu * sqrt(pi_i pi_j) / D with D = pi_i + pi_j + nu * sqrt(pi_i pi_j),
nu >= 0. Fitted by L-BFGS-B over (theta_1..theta_{n-1}, log nu) with the last log-strength fixed
at 0 (as in paper 000, Appendix A.2) and an analytic gradient; nu's box is log nu >= log 1e-12.
Scores are mean-centred natural-log strengths (geometric mean of pi equal to one); ``nu`` is reported.
Degenerate data (digraph of W + ties not strongly connected) gets ``alpha`` virtual ties per pair,
stated in the result, or a refusal with ``on_degenerate="raise"``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..errors import LensError
from ..graphs import GraphStack
from .base import RankResult, centred, check_stack, register, series, strongly_connected_batch
from .bt import DEFAULT_ALPHA, ELO_FACTOR, fit_bt_batch

NU_MIN = 1e-12


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
    off = ~np.eye(n, dtype=bool)
    ok = bool(strongly_connected_batch((((W + T) > 0) & off)[None])[0])
    note = "none (the MLE exists)"
    if not ok:
        if on_degenerate == "raise":
            raise LensError(
                "The Davidson maximum-likelihood estimate does not exist for this selection: some model never "
                "loses (or never wins), or some groups of models were never compared with each other."
            )
        T = T + alpha * off
        note = (
            f"the MLE does not exist (comparison graph not strongly connected); added {alpha} virtual tie(s) "
            "to every pair of models"
        )
    theta0 = fit_bt_batch((W + 0.5 * T)[None], alpha=alpha)[0]
    iu = np.triu_indices(n, 1)
    n_tot = (W + W.T + T)[iu].sum()
    nu0 = max(T[iu].sum(), 0.5) / max(n_tot - T[iu].sum(), 0.5)
    x0 = np.append(theta0[:-1] - theta0[-1], np.log(max(nu0, 1e-3)))
    bounds = [(None, None)] * (n - 1) + [(np.log(NU_MIN), None)]
    opt = minimize(
        davidson_negloglik, x0, args=(W, T), jac=True, method="L-BFGS-B", bounds=bounds,
        options={"maxiter": 5000, "gtol": tol * max(n_tot, 1.0), "ftol": 1e-15},
    )
    theta = centred(np.append(opt.x[:-1], 0.0))
    nu = float(np.exp(opt.x[-1]))
    if scale == "elo":
        theta = theta * ELO_FACTOR
    elif scale != "log":
        raise LensError(f"Unknown Davidson scale {scale!r}; choose log or elo.")
    details = {
        "model": "Davidson (explicit ties)",
        "solver": "L-BFGS-B on (theta, log nu), last theta fixed at 0 then mean-centred",
        "iterations": int(opt.nit),
        "converged": bool(opt.success),
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
    check_stack(stack, "davidson")
    W, T = stack.win_tie_matrices()
    return fit_davidson(W, T, stack.models, alpha=alpha, on_degenerate=on_degenerate, scale=scale)


def _dav_loglik(theta: np.ndarray, phi: np.ndarray, W: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Batched Davidson log-likelihood (B,) up to a constant; each pair counted once."""
    d = theta[:, :, None] - theta[:, None, :]
    n_ij = W + W.swapaxes(1, 2) + T
    nu = np.exp(phi)[:, None, None]
    t_tot = 0.5 * T.sum(axis=(1, 2))
    return 0.5 * (W * d).sum(axis=(1, 2)) + t_tot * phi - 0.5 * (n_ij * np.log(2 * np.cosh(0.5 * d) + nu)).sum(axis=(1, 2))


def fit_davidson_batch(
    W: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Davidson fits for B data sets at once by damped Newton on (theta, log nu).

    ``W``, ``T``: (B, n, n) wins and symmetric ties, each giving an MLE (strongly connected).
    Returns (theta (B, n) mean-centred, nu (B,), converged (B,)). Where the Newton direction is not an
    ascent direction the step falls back to the gradient; backtracking keeps the likelihood rising;
    log nu stays >= log 1e-12 as in the single fit. Used by the bootstrap.
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
        H = np.zeros((B, n + 1, n + 1))  # negative Hessian, theta block made invertible by the mean constraint
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
    return theta, np.exp(phi), converged
