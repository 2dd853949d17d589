"""Theory lab: the random tournament model of paper 000, Section 5, and its recovery thresholds.

Model (Section 5.1): the truth is 1 ≻ 2 ≻ … ≻ n (``G*``); each of t graphs keeps every edge
i → j (i < j) with probability 1/2 + p_ij and reverses it otherwise, independently. The
integration graph ``G~`` (eq. 5) keeps i → j when more than t/2 graphs have it. Exact recovery
(``G~ = G*``) needs t ≈ 4 log n / log(1/(1−4p²)) graphs (Theorem 1); conditioning each graph on
having no directed triangle lowers this to ≈ 2 log n / log(1/(1−4p²)) (Theorem 2). With even t a
pair split t/2 : t/2 goes to the reversed edge (eq. 5 asks for more than t/2), so the default grids
use odd t.

Conditioned law (Section 5.2): a triangle-free tournament is transitive (Lemma 4), i.e. a
permutation, and its law is Mallows(q) with q = (1/2 − p)/(1/2 + p). It is sampled exactly by
repeated insertion: item i goes into a list of the i−1 better items with r of them below it,
P(r) ∝ q^r (r = 0 … i−1), a truncated geometric law drawn by inverse CDF for all samples at once.
The inversion count is Σ r_i, whose law has generating function Π_{r=1..n}(1 + q + … + q^{r−1})/Z.

Everything is batched over replicates; the per-pair win counts of the unconditioned model are
drawn directly as binomials (exact, since edges are independent), with a graph-level sampler
kept as its slow twin for small sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binom

from engine.errors import LensError

MODELS: tuple[str, ...] = ("iid", "triangle_free")


def _check_p(p: float | np.ndarray, n: int) -> np.ndarray:
    """(n, n) matrix of p_ij for i < j (upper triangle), validated in (0, 1/2]."""
    arr = np.asarray(p, dtype=np.float64)
    mat = np.full((n, n), float(arr)) if arr.ndim == 0 else arr
    if mat.shape != (n, n):
        raise LensError(f"The noise p must be a number or an ({n}, {n}) matrix; got shape {mat.shape}.")
    iu = np.triu_indices(n, 1)
    vals = mat[iu]
    if not np.all((vals > 0) & (vals <= 0.5)):
        raise LensError("Every noise level p must lie in (0, 1/2] (1/2 + p is the chance an edge is kept).")
    return mat


def thresholds(n: int, p: float) -> tuple[float, float]:
    """(2 log n, 4 log n) / log(1/(1−4p²)): the triangle-free and unconditioned recovery thresholds."""
    if not 0 < p < 0.5:
        raise LensError(f"The thresholds need 0 < p < 1/2; got p = {p}.")
    rate = np.log(1.0 / (1.0 - 4.0 * p * p))
    return 2.0 * np.log(n) / rate, 4.0 * np.log(n) / rate


def mallows_q(p: float) -> float:
    """q = (1/2 − p)/(1/2 + p) of the conditioned law (paper 000, Section 5.2)."""
    return (0.5 - p) / (0.5 + p)


def sample_graphs(n: int, p: float | np.ndarray, t: int, reps: int, seed: int) -> np.ndarray:
    """(reps, t, n, n) bool tournaments of the unconditioned model (slow twin; small sizes)."""
    P = _check_p(p, n)
    rng = np.random.default_rng(seed)
    keep = rng.random((reps, t, n, n)) < (0.5 + P)
    up = np.triu(np.ones((n, n), dtype=bool), 1)
    fwd = keep & up
    return fwd | (~keep & up).swapaxes(-1, -2)


def integration_graph(graphs: np.ndarray) -> np.ndarray:
    """Majority-vote graph of eq. 5 for a (..., t, n, n) stack: i → j (i < j) iff more than t/2
    graphs have i → j, else j → i."""
    g = np.asarray(graphs, dtype=bool)
    t, n = g.shape[-3], g.shape[-1]
    counts = g.sum(axis=-3)
    up = np.triu(np.ones((n, n), dtype=bool), 1)
    fwd = (counts > t / 2.0) & up
    return fwd | (~fwd & up).swapaxes(-1, -2)


def mallows_permutations(n: int, q: float, size: int, seed: int) -> np.ndarray:
    """(size, n) exact Mallows(q) samples by repeated insertion: row = items best-first (0-based)."""
    if not 0 <= q <= 1:
        raise LensError(f"The Mallows parameter q must lie in [0, 1]; got {q}.")
    rng = np.random.default_rng(seed)
    perm = np.zeros((size, n), dtype=np.int64)
    cols = np.arange(n)
    for i in range(1, n):  # loop over items (n), every sample at once
        u = rng.random(size)
        m = i + 1  # positions 0..i; r = number of earlier (better) items placed after the new one
        if q == 0:
            r = np.zeros(size, dtype=np.int64)
        elif q == 1:
            r = np.floor(u * m).astype(np.int64)
        else:
            r = np.floor(np.log1p(-u * (1.0 - q**m)) / np.log(q)).astype(np.int64)
        r = np.minimum(r, i)
        pos = (i - r)[:, None]  # index in the new list; r earlier items end up after item i
        cur = perm[:, :i]
        zero = np.zeros((size, 1), dtype=np.int64)
        left, right = np.concatenate([cur, zero], axis=1), np.concatenate([zero, cur], axis=1)
        c = cols[None, : i + 1]
        new = np.where(c < pos, left, np.where(c > pos, right, i))
        perm[:, : i + 1] = new
    return perm


def inversions(perm: np.ndarray) -> np.ndarray:
    """Inversion count of each row: position pairs a < b holding a larger item before a smaller one."""
    p = np.asarray(perm)
    return np.triu(p[:, :, None] > p[:, None, :], 1).sum(axis=(1, 2))


def inversion_law(n: int, q: float) -> np.ndarray:
    """Exact law of inv(π) under Mallows_n(q): coefficients of Π_{r=1..n}(1 + … + q^{r−1}), normalised."""
    poly = np.array([1.0])
    for r in range(1, n + 1):
        poly = np.convolve(poly, q ** np.arange(r))
    return poly / poly.sum()


def alpha_d(q: float, d: int | np.ndarray) -> np.ndarray:
    """P[(i, i+d) ∈ E(G) | no triangle] of paper 000, Proposition 5 (closed form)."""
    d = np.asarray(d, dtype=np.float64)
    return (1 - (d + 1) * q**d + d * q ** (d + 1)) / ((1 - q**d) * (1 - q ** (d + 1)))


def graphs_from_permutations(perm: np.ndarray) -> np.ndarray:
    """(…, n) best-first item lists → (…, n, n) transitive tournaments (i → j iff i listed first)."""
    pos = np.argsort(perm, axis=-1)
    return pos[..., :, None] < pos[..., None, :]


def pair_counts(n: int, p: float | np.ndarray, t: int, reps: int, model: str, seed: int) -> np.ndarray:
    """(reps, n, n) counts N_ij = #graphs with i → j among t, for i < j (upper triangle used)."""
    rng = np.random.default_rng(seed)
    if model == "iid":
        P = _check_p(p, n)
        return rng.binomial(t, np.broadcast_to(0.5 + P, (reps, n, n)))
    if model == "triangle_free":
        if np.ndim(p) != 0:
            raise LensError(
                "The triangle-free model is sampled exactly only for one noise level p (a number)."
            )
        _check_p(p, n)
        q = mallows_q(float(p))
        perms = mallows_permutations(n, q, reps * t, int(rng.integers(2**32)))
        pos = np.argsort(perms, axis=1).reshape(reps, t, n)
        out = np.zeros((reps, n, n), dtype=np.int64)
        step = max(1, 8_000_000 // max(1, t * n * n))
        for a in range(0, reps, step):  # chunks of replicates bound the (chunk, t, n, n) temporary
            b = pos[a:a + step]
            out[a:a + step] = (b[:, :, :, None] < b[:, :, None, :]).sum(axis=1, dtype=np.int32)
        return out
    raise LensError(f"Unknown model {model!r}; choose {' or '.join(MODELS)}.")


def recovered(counts: np.ndarray, t: int) -> np.ndarray:
    """(reps,) bool: the majority graph equals G* (N_ij > t/2 for every i < j)."""
    n = counts.shape[-1]
    iu = np.triu_indices(n, 1)
    return np.asarray((counts[:, iu[0], iu[1]] > t / 2.0).all(axis=1))  # asarray: typed as an array


def exact_recovery_iid(n: int, p: float | np.ndarray, t: int) -> float:
    """Closed form for the unconditioned model: Π_{i<j} P[Bin(t, 1/2 + p_ij) > t/2]."""
    P = _check_p(p, n)
    iu = np.triu_indices(n, 1)
    return float(np.prod(binom.sf(np.floor(t / 2.0), t, 0.5 + P[iu])))


def wilson_interval(successes: np.ndarray, trials: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for binomial proportions: unlike the Wald interval it keeps a width at
    0 and at ``trials`` successes (e.g. [0, 0.0095] for 0 of 400 at 95 %)."""
    from scipy.stats import norm

    k = np.asarray(successes, dtype=np.float64)
    z = float(norm.ppf(0.5 + level / 2.0))
    denom = trials + z * z
    centre = (k + z * z / 2.0) / denom
    half = z * np.sqrt(k * (trials - k) / trials + z * z / 4.0) / denom
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def odd_grid(t_max: int, points: int = 25) -> np.ndarray:
    """About ``points`` odd t from 1 to ``t_max``: with odd t a pair can never split evenly (see
    ``recovery_curve``), so the curve is not jagged by the even-t rule."""
    if int(t_max) < 1:
        raise LensError(f"The largest t must be at least 1; got {t_max}.")
    raw = np.linspace(1, int(t_max), max(1, int(points)))
    return np.unique(2 * np.floor((raw - 1) / 2).astype(np.int64) + 1)


def recovery_curve(
    n: int, p: float, ts: list[int] | np.ndarray | None = None, reps: int = 400, seed: int = 20260324,
    models: tuple[str, ...] = MODELS,
) -> pd.DataFrame:
    """Simulated P[G~ = G*] against t for each model, with a 95 % Wilson interval; the
    unconditioned model also carries its closed form. Columns: model, t, prob, ci_low, ci_high,
    exact, t_triangle_free (2 log n/…), t_iid (4 log n/…), even_t.

    Default ``ts``: odd t up to twice the unconditioned threshold (``odd_grid``). Even t, stated:
    eq. 5 keeps i → j only when MORE than t/2 graphs have it, so a pair split exactly t/2 : t/2
    goes to the reversed edge and counts as a failure; an even t therefore recovers less often than
    the odd t − 1 before it, and ``even_t`` marks those rows.
    """
    t2, t4 = thresholds(n, p)
    ts = odd_grid(int(np.ceil(2 * t4)) + 1) if ts is None else ts
    rows = []
    for mi, model in enumerate(models):
        for ti, t in enumerate(ts):
            t = int(t)
            if t < 1:
                raise LensError(f"Every t must be ≥ 1; got {t}.")
            ok = recovered(pair_counts(n, p, t, reps, model, seed + 1000 * mi + ti), t)
            lo, hi = wilson_interval(ok.sum(), reps)
            rows.append(
                {
                    "model": model,
                    "t": t,
                    "prob": float(ok.mean()),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "exact": exact_recovery_iid(n, p, t) if model == "iid" else np.nan,
                    "t_triangle_free": t2,
                    "t_iid": t4,
                    "even_t": t % 2 == 0,
                }
            )
    return pd.DataFrame(rows)


def crossing(ts: np.ndarray, prob: np.ndarray, level: float = 0.5) -> float:
    """The t where a rising curve first reaches ``level`` (linear interpolation); NaN if never."""
    ts, prob = np.asarray(ts, dtype=np.float64), np.asarray(prob, dtype=np.float64)
    above = np.flatnonzero(prob >= level)
    if above.size == 0:
        return float("nan")
    k = int(above[0])
    if k == 0:
        return float(ts[0])
    t0, t1, p0, p1 = ts[k - 1], ts[k], prob[k - 1], prob[k]
    return float(t0 + (level - p0) * (t1 - t0) / (p1 - p0))
