"""The judge panel: one ranking from several judges, each weighed by a reliability fitted jointly with
the model strengths, and each judge's reliability and side (position) bias with intervals.

Model (the noisy Bradley-Terry of crowd-kit's ``NoisyBradleyTerry``; chosen over a pairwise Dawid-Skene
because it keeps the leaderboard's Bradley-Terry strengths as the ranking and has one reliability and
one side bias per judge, the two numbers a judge report asks for, where Dawid-Skene needs a confusion
matrix per judge and a class per pair). A verdict of judge ``j`` on models shown first ``f`` and
second ``g``: with probability ``p_j = sigma(gamma_j)`` the judge reads the strengths and the first
wins with ``sigma(s_f - s_g)``; otherwise it answers by side and the first wins with
``b_j = sigma(q_j)``:

    P(first wins) = p_j sigma(s_f - s_g) + (1 - p_j) b_j,   P(second wins) = 1 - P(first wins).

``p_j`` is the reliability (1: follows the strengths, 0: ignores the answers), ``b_j`` the side bias
(0.5: none; above: favours the answer shown first). Where a verdict's presentation order is unknown
the side it would favour is unknown too: its guess picks either answer with 1/2 (the average of
``b_j`` and ``1 - b_j``). A tie counts half a win for each side (the leaderboard's W + T/2 reading;
crowd-kit has no ties). A Gaussian prior, ``ridge / 2`` times the sum of the squared parameters
(strengths, gamma, q), keeps the estimate finite when a model wins every comparison or a judge never
deviates from the strengths; ``ridge=0`` is the plain maximum likelihood crowd-kit maximises.

The fit reads counts per (judge, first model, second model, order known): a few thousand cells even
for a million verdicts. The joint maximum is found by L-BFGS on the exact gradient; intervals are
Wald intervals from the observed information (the Hessian of the penalised negative log-likelihood,
in closed form), strengths on the sum-zero subspace (they are identified only up
to a shift), reliabilities and biases on their logit scale and mapped back through sigma.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, check_stack, register, series, single_thread_blas

DEFAULT_RIDGE = 0.01
"""The prior's precision on every parameter (variance 100 on the logit scale): negligible against a few
hundred verdicts, enough to keep a perfect judge's reliability and an unbeaten model's strength finite."""

Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile (95 % two-sided Wald intervals)."""


@dataclass(frozen=True)
class PanelCells:
    """Verdict counts per (judge, model shown first, model shown second, order known).

    ``first``/``second``: model codes into ``models`` (where the order is unknown, ``first`` is model_a);
    ``known``: the presentation order is recorded; ``first_wins``/``second_wins``/``ties``: verdicts."""

    models: tuple[str, ...]
    judges: tuple[str, ...]
    judge: np.ndarray
    first: np.ndarray
    second: np.ndarray
    known: np.ndarray
    first_wins: np.ndarray
    second_wins: np.ndarray
    ties: np.ndarray

    @property
    def n_verdicts(self) -> int:
        """All verdicts counted."""
        return int((self.first_wins + self.second_wins + self.ties).sum())

    def restrict_judges(self, names: list[str]) -> PanelCells:
        """The cells of the named judges only (codes renumbered in the order of ``names``)."""
        code = {j: k for k, j in enumerate(self.judges)}
        new = np.full(len(self.judges), -1, dtype=np.int64)
        for k, name in enumerate(names):
            new[code[name]] = k
        keep = new[self.judge] >= 0
        return PanelCells(self.models, tuple(names), new[self.judge[keep]], self.first[keep],
                          self.second[keep], self.known[keep], self.first_wins[keep], self.second_wins[keep],
                          self.ties[keep])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def _split(x: np.ndarray, n: int, J: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return x[:n], x[n:n + J], x[n + J:n + 2 * J]


def neg_log_likelihood(x: np.ndarray, cells: PanelCells, ridge: float = 0.0) -> tuple[float, np.ndarray]:
    """(the penalised negative log-likelihood, its gradient) at parameters ``x`` = (strengths (n),
    gamma (J), q (J)) on ``cells`` (module docstring)."""
    n, J = len(cells.models), len(cells.judges)
    s, gamma, q = _split(np.asarray(x, dtype=np.float64), n, J)
    f, g, j = cells.first, cells.second, cells.judge
    sd = _sigmoid(s[f] - s[g])
    p = _sigmoid(gamma)[j]
    b = np.where(cells.known, _sigmoid(q)[j], 0.5)
    pf = np.clip(p * sd + (1.0 - p) * b, 1e-300, 1.0)
    ps = np.clip(1.0 - pf, 1e-300, 1.0)
    a_cnt = cells.first_wins + 0.5 * cells.ties
    b_cnt = cells.second_wins + 0.5 * cells.ties
    value = -float(a_cnt @ np.log(pf) + b_cnt @ np.log(ps))
    w = a_cnt / pf - b_cnt / ps  # d loglik / d P(first wins)
    ds = w * p * sd * (1.0 - sd)
    grad_s = np.bincount(f, ds, n) - np.bincount(g, ds, n)
    grad_gamma = np.bincount(j, w * p * (1.0 - p) * (sd - b), J)
    grad_q = np.bincount(j, np.where(cells.known, w * (1.0 - p) * b * (1.0 - b), 0.0), J)
    grad = -np.concatenate([grad_s, grad_gamma, grad_q])
    if ridge:
        value += 0.5 * ridge * float(x @ x)
        grad = grad + ridge * np.asarray(x, dtype=np.float64)
    return value, grad


@dataclass(frozen=True)
class PanelFit:
    """The joint fit: strengths (sum zero), each judge's gamma and q, and the covariance of all of them
    (``cov``: (n + 2J) square, strengths on the sum-zero subspace; NaN rows for parameters not
    identified, e.g. q of a judge whose verdicts never record their order)."""

    models: tuple[str, ...]
    judges: tuple[str, ...]
    strengths: np.ndarray
    gamma: np.ndarray
    q: np.ndarray
    cov: np.ndarray
    converged: bool
    iterations: int
    neg_log_likelihood: float
    ridge: float
    side_known: np.ndarray
    verdicts: np.ndarray

    def se(self) -> np.ndarray:
        """Standard errors of (strengths, gamma, q)."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def judge_table(self, z: float = Z95) -> pd.DataFrame:
        """One row per judge: verdicts, reliability sigma(gamma) and side bias sigma(q) with their Wald
        intervals (on the logit scale, mapped through sigma)."""
        n, J = len(self.models), len(self.judges)
        _, se_g, se_q = _split(self.se(), n, J)
        q = np.where(self.side_known, self.q, np.nan)
        return pd.DataFrame({
            "judge": list(self.judges),
            "verdicts": self.verdicts.astype(np.int64),
            "reliability": _sigmoid(self.gamma),
            "reliability_low": _sigmoid(self.gamma - z * se_g),
            "reliability_high": _sigmoid(self.gamma + z * se_g),
            "side_bias": _sigmoid(q),
            "side_bias_low": _sigmoid(q - z * se_q),
            "side_bias_high": _sigmoid(q + z * se_q),
        })


def _sum_zero_basis(n: int) -> np.ndarray:
    """An (n, n - 1) orthonormal basis of the vectors summing to zero."""
    m = np.eye(n)[:, :-1] - 1.0 / n
    qmat, _ = np.linalg.qr(m)
    return qmat[:, : n - 1]


def hessian(x: np.ndarray, cells: PanelCells, ridge: float = 0.0) -> np.ndarray:
    """The penalised negative log-likelihood's Hessian at ``x``, in closed form: per cell, with
    P = P(first wins) and its derivatives in the cell's own coordinates u = (d = s_f - s_g, gamma_j, q_j),
    the log-likelihood's second derivatives are -(A/P^2 + B/(1-P)^2) dP dP' + (A/P - B/(1-P)) d2P, then
    scattered to the strengths (d moves s_f by +1 and s_g by -1), gamma_j and q_j."""
    n, J = len(cells.models), len(cells.judges)
    s, gamma, q = _split(np.asarray(x, dtype=np.float64), n, J)
    f, g, j = cells.first, cells.second, cells.judge
    known = cells.known.astype(np.float64)
    sd = _sigmoid(s[f] - s[g])
    p = _sigmoid(gamma)[j]
    b = np.where(cells.known, _sigmoid(q)[j], 0.5)
    pf = np.clip(p * sd + (1.0 - p) * b, 1e-300, 1.0)
    ps = np.clip(1.0 - pf, 1e-300, 1.0)
    a_cnt = cells.first_wins + 0.5 * cells.ties
    b_cnt = cells.second_wins + 0.5 * cells.ties
    w1 = a_cnt / pf - b_cnt / ps
    w2 = a_cnt / pf**2 + b_cnt / ps**2
    dsd = sd * (1.0 - sd)
    grad = (p * dsd, p * (1.0 - p) * (sd - b), known * (1.0 - p) * b * (1.0 - b))
    second = {
        (0, 0): p * dsd * (1.0 - 2.0 * sd),
        (0, 1): p * (1.0 - p) * dsd,
        (0, 2): np.zeros_like(sd),
        (1, 1): p * (1.0 - p) * (1.0 - 2.0 * p) * (sd - b),
        (1, 2): -known * p * (1.0 - p) * b * (1.0 - b),
        (2, 2): known * (1.0 - p) * b * (1.0 - b) * (1.0 - 2.0 * b),
    }
    k = n + 2 * J
    h = np.zeros((k, k))
    # each local coordinate as (parameter index, sign) pairs: d = +s_f - s_g
    where = {0: ((f, 1.0), (g, -1.0)), 1: ((n + j, 1.0),), 2: ((n + J + j, 1.0),)}
    for (u, v), d2 in second.items():
        huv = -(w1 * d2 - w2 * grad[u] * grad[v])  # of the NEGATIVE log-likelihood
        for iu, su in where[u]:
            for iv, sv in where[v]:
                np.add.at(h, (iu, iv), su * sv * huv)
                if u != v:
                    np.add.at(h, (iv, iu), su * sv * huv)
    return h + ridge * np.eye(k)


def hessian_by_differences(x: np.ndarray, cells: PanelCells, ridge: float = 0.0) -> np.ndarray:
    """The same Hessian by central differences of the exact gradient (the check of ``hessian``)."""
    k = x.size
    h = np.empty((k, k))
    for i in range(k):
        eps = 1e-5 * max(1.0, abs(x[i]))
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        h[:, i] = (neg_log_likelihood(up, cells, ridge)[1]
                   - neg_log_likelihood(down, cells, ridge)[1]) / (2 * eps)
    return 0.5 * (h + h.T)


def _covariance(x: np.ndarray, cells: PanelCells, ridge: float, free: np.ndarray) -> np.ndarray:
    """Inverse observed information on the free parameters, strengths restricted to sum zero."""
    n = len(cells.models)
    k = x.size
    cols = [np.vstack([_sum_zero_basis(n), np.zeros((k - n, n - 1))])]
    for i in np.flatnonzero(free[n:]) + n:
        e = np.zeros((k, 1))
        e[i] = 1.0
        cols.append(e)
    basis = np.hstack(cols)
    hz = basis.T @ hessian(x, cells, ridge) @ basis
    try:
        inv = np.linalg.inv(hz)
        if not np.isfinite(inv).all() or (np.diag(inv) < 0).any():
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        return np.full((k, k), np.nan)
    cov = basis @ inv @ basis.T
    cov[~free, :] = np.nan
    cov[:, ~free] = np.nan
    return cov


def _start(cells: PanelCells) -> np.ndarray:
    """Start values: log win ratios of the pooled half-tie counts (shrunk), reliability 0.73, no bias."""
    n, J = len(cells.models), len(cells.judges)
    won = np.bincount(cells.first, cells.first_wins + 0.5 * cells.ties, n) + np.bincount(
        cells.second, cells.second_wins + 0.5 * cells.ties, n)
    played = np.bincount(cells.first, cells.first_wins + cells.second_wins + cells.ties, n) + np.bincount(
        cells.second, cells.first_wins + cells.second_wins + cells.ties, n)
    s0 = np.log((won + 1.0) / (played - won + 1.0))
    return np.concatenate([s0 - s0.mean(), np.ones(J), np.zeros(J)])


def fit_panel(cells: PanelCells, *, ridge: float = DEFAULT_RIDGE, tol: float = 1e-10,
              max_iter: int = 5000) -> PanelFit:
    """The joint maximum (penalised by ``ridge``) of the noisy Bradley-Terry on ``cells`` and its
    observed-information covariance. q of a judge without a verdict of known order stays 0 (not
    identified; its side bias is reported empty)."""
    from scipy.optimize import minimize

    if not np.isfinite(ridge) or ridge < 0:
        raise LensError(f"Ranker parameter ridge={ridge!r} of panel must be a finite number, 0 or more.")
    n, J = len(cells.models), len(cells.judges)
    total = cells.first_wins + cells.second_wins + cells.ties
    verdicts = np.bincount(cells.judge, total, J)
    side_known = np.bincount(cells.judge, np.where(cells.known, total, 0.0), J) > 0
    free = np.concatenate([np.ones(n + J, dtype=bool), side_known])
    x0 = _start(cells)
    bounds = [(None, None)] * (n + J) + [(None, None) if k else (0.0, 0.0) for k in side_known]
    with single_thread_blas():  # L-BFGS-B's small products: threads only contend (0.9 s vs 0.15 s a fit)
        res = minimize(neg_log_likelihood, x0, args=(cells, ridge), jac=True, method="L-BFGS-B",
                       bounds=bounds, options={"maxiter": max_iter, "ftol": 1e-15, "gtol": tol, "maxcor": 30})
    x = res.x.copy()
    x[:n] -= x[:n].mean()  # the likelihood depends on differences only; the prior is centred too
    cov = _covariance(x, cells, ridge, free)
    s, gamma, q = _split(x, n, J)
    grad = neg_log_likelihood(x, cells, ridge)[1]
    converged = bool(res.success) or float(np.abs(grad[free]).max(initial=0.0)) < 1e-6 * max(1.0, total.sum())
    return PanelFit(cells.models, cells.judges, s, gamma, q, cov, converged, int(res.nit), float(res.fun),
                    float(ridge), side_known, verdicts)


def parse_judges(text: str, available: tuple[str, ...] | list[str]) -> list[str]:
    """The panel's judges from ``judges=a,b,c`` (empty: every judge of the selection); a judge named
    twice or absent from the selection is refused in one sentence."""
    names = [t.strip() for t in str(text or "").split(",") if t.strip()]
    if not names:
        return list(available)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise LensError(f"The panel names judge {name!r} twice (judges={text}); name each judge once.")
        seen.add(name)
    missing = [m for m in names if m not in set(available)]
    if missing:
        raise LensError(f"The panel's judge(s) {', '.join(map(repr, missing))} have no valid verdict in this "
                        f"selection; its judges are {', '.join(available)}.")
    return names


def panel_result(cells: PanelCells, *, ridge: float = DEFAULT_RIDGE, judges: str = "",
                 source: str = "verdicts") -> RankResult:
    """Fit the panel on ``cells`` (restricted to ``judges`` when given) and return the ranker's result:
    scores = strengths; details = how it was fitted and, per judge, reliability and side bias with 95 %
    intervals (``details["judges"]``, also ``extras["judges"]`` as a frame); ``extras["strength_se"]``:
    each strength's standard error, ``extras["strength_cov"]`` their (n, n) covariance."""
    chosen = parse_judges(judges, cells.judges)
    if tuple(chosen) != cells.judges:
        cells = cells.restrict_judges(chosen)
    if cells.n_verdicts == 0:
        raise LensError("The panel got no verdict: the selection holds no valid verdict of its judges.")
    fit = fit_panel(cells, ridge=ridge)
    jt = fit.judge_table()
    n = len(fit.models)
    details = {
        "model": "noisy Bradley-Terry (crowd-kit's NoisyBradleyTerry): P(first wins) = sigma(gamma_j) "
                 "sigma(s_f - s_g) + (1 - sigma(gamma_j)) sigma(q_j); ties half a win each side",
        "fit": "joint penalised maximum likelihood (L-BFGS, exact gradient); intervals from the observed "
               "information (95 % Wald, logit scale for reliability and side bias)",
        "ridge": fit.ridge,
        "converged": fit.converged,
        "iterations": fit.iterations,
        "neg_log_likelihood": fit.neg_log_likelihood,
        "observations": source,
        "n_verdicts": cells.n_verdicts,
        "judges": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                    for k, v in row.items()} for row in jt.to_dict("records")],
    }
    se = fit.se()[:n]
    return RankResult("panel", series(fit.models, fit.strengths), details,
                      {"judges": jt, "strength_se": series(fit.models, se), "strength_cov": fit.cov[:n, :n]})


def cells_of_stack(stack: GraphStack) -> PanelCells:
    """Panel cells from a graph stack: each graph's edges as verdicts of its judge, presentation order
    unknown (the stack has combined the two orders), so no side bias is fitted on this path."""
    judge_names = stack.keys["judge"].astype(str).to_numpy() if "judge" in stack.keys.columns else np.full(
        stack.T, "judge")
    judges, jcode = np.unique(judge_names, return_inverse=True)
    n = stack.n
    wins = np.asarray(stack.wins, dtype=np.float64)
    ties = np.asarray(stack.ties, dtype=np.float64)
    W = np.stack([wins[jcode == k].sum(axis=0) for k in range(len(judges))])
    T = np.stack([ties[jcode == k].sum(axis=0) for k in range(len(judges))])
    lo, hi = np.triu_indices(n, 1)
    j = np.repeat(np.arange(len(judges)), lo.size)
    f, g = np.tile(lo, len(judges)), np.tile(hi, len(judges))
    fw, sw, tt = W[j, f, g], W[j, g, f], T[j, f, g]
    keep = (fw + sw + tt) > 0
    return PanelCells(tuple(stack.models), tuple(str(x) for x in judges), j[keep], f[keep], g[keep],
                      np.zeros(int(keep.sum()), dtype=bool), fw[keep], sw[keep], tt[keep])


@register("panel", "judge panel: noisy Bradley-Terry fitted jointly with each judge's reliability and side "
                   "bias (crowd-kit's model); --param judges=a,b picks the panel")
def panel(stack: GraphStack, *, ridge: float = DEFAULT_RIDGE, judges: str = "") -> RankResult:
    """The panel on a graph stack (graph edges, orders unknown: no side bias); the leaderboard fits it on
    the verdicts with their orders instead (``engine.ranking.panel_board``)."""
    check_stack(stack, "panel")
    return panel_result(cells_of_stack(stack), ridge=ridge, judges=judges, source="graph edges")
