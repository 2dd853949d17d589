"""Prediction-powered ranking (PPR): rank-sets from a few human verdicts and many judge verdicts.

Chatzi, Straitouri, Thejaswi and Gomez-Rodriguez, "Prediction-Powered Ranking of Large Language Models"
(NeurIPS 2024). Every battle is one comparison of two models; a verdict gives each side an indicator
``w`` (1 when that side won; a tie is 0 for both sides, the paper's tie rule). A model's *win rate* is
its wins over the battles it took part in. The inputs:

* ``labelled``: the n battles judged by the human AND the proxy judge (``Battles`` of the same rows,
  one per judge);
* ``unlabelled``: the N battles only the proxy judged.

Numbers, as the authors' code (github:Networks-Learning/prediction-powered-ranking, src/estimate.py and
src/ranksets.py) computes them; ``bench/check_ppr_peer.py`` checks ours equal theirs:

* residual matrix ``R`` (k x battles) of a set of verdicts around per-model means ``m``: battle j puts
  ``w_a - m[a]`` in row a and ``w_b - m[b]`` in row b, 0 elsewhere; a set's *spread* is ``R R^T / size``.
* one-judge estimate (the baselines "human only", "proxy only"): the win rates, covariance
  ``R R^T / n^2`` (n: the set's battles, not each model's).
* PPR weight ``lambda`` = trace(R_human R_proxy^T / n) / ((1 + n / N) trace(R_N R_N^T / N)) on the labelled
  set's human and proxy residuals and the unlabelled set's proxy residuals, clipped to [0, 1].
* PPR estimate: ``lambda`` x the proxy's win rates on the unlabelled set, minus the per-model mean of the
  rectifier ``lambda w_proxy - w_human`` on the labelled set (means over each model's battles, as the
  win rates); covariance ``lambda^2 R_N R_N^T / N^2 + R_d R_d^T / n^2``, R_d the rectifier's residuals.
* rank-sets (the paper's Algorithm 2): models i and j are *separated* when
  ``|t_i - t_j| / sqrt(2) > sqrt((S_ii + S_jj - 2 S_ij) q / 2)`` with q the chi-square quantile of
  1 - alpha at k degrees of freedom; a model's rank-set is [1 + the models separated above it,
  k - the models separated below it] (rank 1 the best).

Variance (``VARIANCES``): ``paper`` divides each set's ``R R^T`` by its battles squared, as the authors'
code does; ``per-model`` divides entry (i, j) by (battles of i) x (battles of j) in that set: the
variance of a per-model mean. The estimates are per-model means, so ``paper`` is smaller by about
(2 / k)^2 when every pair has the same count: on generated data with k = 12 close models its rank-sets
held the true ranking in 58 % of repetitions at alpha = 0.05, ``per-model``'s in 100 %
(bench/ppr_coverage.py, docs/notes/i28ppr-28.md). ``paper`` stays the default: it is the published method.

Everything is O(battles + k^2): per-model sums by ``np.bincount``, never a k x battles matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARIANCES: tuple[str, ...] = ("paper", "per-model")
"""How a set's residual Gram matrix is scaled into a covariance (module docstring)."""


@dataclass(frozen=True)
class Battles:
    """One judge's verdicts on battles: the two models' indices and each side's win indicator (0/1 floats;
    a tie is 0 and 0)."""

    model_a: np.ndarray
    model_b: np.ndarray
    win_a: np.ndarray
    win_b: np.ndarray

    def __len__(self) -> int:
        return int(self.model_a.shape[0])

    def with_wins(self, win_a: np.ndarray, win_b: np.ndarray) -> Battles:
        """The same battles with other per-side values (the rectifier)."""
        return Battles(self.model_a, self.model_b, win_a, win_b)


@dataclass(frozen=True)
class Estimate:
    """Win-rate estimates, their covariance and, for PPR, the weight of the proxy (``lam``; None for a
    one-judge estimate)."""

    theta: np.ndarray
    cov: np.ndarray
    lam: float | None = None

    @property
    def std_error(self) -> np.ndarray:
        """Each estimate's standard error, sqrt of the covariance's diagonal (0 where it rounds below 0)."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))


def battles_per_model(k: int, battles: Battles) -> np.ndarray:
    """How many battles each of the k models took part in."""
    counts = np.bincount(battles.model_a, minlength=k) + np.bincount(battles.model_b, minlength=k)
    return counts.astype(float)


def model_means(k: int, battles: Battles) -> np.ndarray:
    """Each model's mean of its side's value over the battles it took part in (its win rate when the
    values are win indicators); NaN for a model in none."""
    total = (np.bincount(battles.model_a, weights=battles.win_a, minlength=k)
             + np.bincount(battles.model_b, weights=battles.win_b, minlength=k))
    count = battles_per_model(k, battles)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / count


def _residuals(battles: Battles, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each battle's two residuals: side a's value minus its model's mean, and side b's."""
    return battles.win_a - means[battles.model_a], battles.win_b - means[battles.model_b]


def residual_gram(k: int, battles: Battles, means: np.ndarray) -> np.ndarray:
    """``R R^T`` (k x k) for the residual matrix R of the battles around ``means`` (module docstring)."""
    res_a, res_b = _residuals(battles, means)
    gram = np.zeros((k, k))
    np.fill_diagonal(gram, np.bincount(battles.model_a, weights=res_a * res_a, minlength=k)
                     + np.bincount(battles.model_b, weights=res_b * res_b, minlength=k))
    cross = np.bincount(battles.model_a * k + battles.model_b, weights=res_a * res_b,
                        minlength=k * k).reshape(k, k)
    return gram + cross + cross.T


def residual_cross_trace(human: Battles, proxy: Battles, human_means: np.ndarray,
                         proxy_means: np.ndarray) -> float:
    """trace(R_human R_proxy^T) over the same battles: the sum of each side's two residuals' product (a
    battle of a model with itself, which real data never has, adds its cross terms too)."""
    ha, hb = _residuals(human, human_means)
    pa, pb = _residuals(proxy, proxy_means)
    same = human.model_a == human.model_b
    return float(np.sum(ha * pa + hb * pb + np.where(same, ha * pb + hb * pa, 0.0)))


def scaled(k: int, gram: np.ndarray, battles: Battles, variance: str) -> np.ndarray:
    """A set's ``R R^T`` as a covariance: over its battles squared (``paper``) or over the two models'
    battle counts (``per-model``; module docstring)."""
    if variance == "paper":
        return gram / float(len(battles)) ** 2
    if variance == "per-model":
        counts = battles_per_model(k, battles)
        return gram / np.outer(counts, counts)
    raise ValueError(f"unknown variance {variance!r}; one of {', '.join(VARIANCES)}")


def win_rate_estimate(k: int, battles: Battles, variance: str = "paper") -> Estimate:
    """One judge's win rates and covariance (``R R^T / n^2`` for ``paper``): the baselines."""
    theta = model_means(k, battles)
    return Estimate(theta, scaled(k, residual_gram(k, battles, theta), battles, variance))


def ppr_weight(k: int, human: Battles, proxy: Battles, unlabelled: Battles) -> float:
    """The proxy's weight lambda in [0, 1] (module docstring): the human-proxy residual covariance on the
    labelled battles over the proxy's spread on the unlabelled ones, scaled by 1 + n / N."""
    n, big = len(human), len(unlabelled)
    cross = residual_cross_trace(human, proxy, model_means(k, human), model_means(k, proxy)) / n
    proxy_big_means = model_means(k, unlabelled)
    spread = np.trace(residual_gram(k, unlabelled, proxy_big_means)) / big
    lam = cross / ((1.0 + n / big) * spread)
    return float(min(max(lam, 0.0), 1.0))


def ppr_estimate(k: int, human: Battles, proxy: Battles, unlabelled: Battles,
                 lam: float | None = None, variance: str = "paper") -> Estimate:
    """The prediction-powered win rates and covariance (module docstring); ``lam`` None: the weight
    ``ppr_weight`` chooses. ``human`` and ``proxy`` hold the same labelled battles in the same order."""
    if lam is None:
        lam = ppr_weight(k, human, proxy, unlabelled)
    proxy_big = model_means(k, unlabelled)
    rectifier = human.with_wins(lam * proxy.win_a - human.win_a, lam * proxy.win_b - human.win_b)
    correction = model_means(k, rectifier)
    theta = lam * proxy_big - correction
    cov = (lam ** 2) * scaled(k, residual_gram(k, unlabelled, proxy_big), unlabelled, variance) \
        + scaled(k, residual_gram(k, rectifier, correction), rectifier, variance)
    return Estimate(theta, cov, lam)


def rank_sets(theta: np.ndarray, cov: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Each model's rank-set [low, high] at level 1 - alpha (the paper's Algorithm 2; module docstring):
    1 + the models separated above it, k - the models separated below it."""
    from scipy.stats import chi2

    k = theta.shape[0]
    q = chi2.ppf(1.0 - alpha, k)
    diag = np.diag(cov)
    gap = np.abs(theta[:, None] - theta[None, :]) / np.sqrt(2.0)
    with np.errstate(invalid="ignore"):  # a variance rounding below 0 separates nothing (NaN > 0 is False)
        reach = np.sqrt((diag[:, None] + diag[None, :] - 2.0 * cov) * (q / 2.0))
        separated = gap - reach > 0
    np.fill_diagonal(separated, False)
    above = separated & (theta[:, None] < theta[None, :])
    below = separated & (theta[:, None] > theta[None, :])
    return 1 + above.sum(axis=1), k - below.sum(axis=1)
