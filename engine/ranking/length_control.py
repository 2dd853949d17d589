"""AlpacaEval 2's length-controlled (LC) win rate of each model against one baseline.

For each model, its verdicts against the baseline are fitted with a logistic GLM on two terms:
P(model beats baseline) = sigmoid(w_len * tanh(d / sd(d)) + w_0), where d is the model's answer length
minus the baseline's, in characters (Python string length), and sd(d) the sample standard deviation
(ddof 1, not centred) of d over the model's verdicts that carry both texts. The label is the soft
preference where the verdict has one (AlpacaEval's weighted annotators), else 1, 0 or 1/2 from the winner;
invalid verdicts count in sd(d) but not in the fit. The penalty is AlpacaEval's: an L1 norm on both
weights, ||w||_1 + C * sum of cross-entropies, C chosen from 10 values log-spaced over [1e-4, 1e4] by
5-fold cross-validated cross-entropy (fold of the k-th of m fitted verdicts: (m - 1 - k) mod 5, the
folds scikit-learn's GroupKFold draws for equal groups), then refitted on all verdicts. The LC win rate
is the fit's prediction at zero length difference, sigmoid(w_0).

This is alpaca_eval's ``length_controlled_minimal`` GLM. Its leaderboard's ``length_controlled_v1``
adds two terms that need data alpaca_eval downloads from its Hugging Face dataset (``df_gamed.csv``):
a per-instruction difficulty (precomputed by AlpacaEval from many models' annotations on its 805
instructions) and the annotations of two deliberately length-gamed baselines, added to every fit at
weight 0.2 / 2 to pull the weights towards them. Neither exists for a user's own prompts, so both are
left out here (``docs/notes/lc-24.md`` measures what that changes on AlpacaEval's own files).
The plain ``win_rate_vs_baseline`` beside it is AlpacaEval's ``win_rate``: the mean preference for the
model over its valid verdicts against the baseline, draws counted half.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.errors import LensError

if TYPE_CHECKING:
    from engine.ranking.board import Leaderboard
    from engine.store.connection import Store

CS = np.logspace(-4, 4, 10)
"""The penalty weights C the cross-validation chooses from (scikit-learn's LogisticRegressionCV grid)."""
N_FOLDS = 5
CLIP = 1e-15
"""Predicted probabilities are clipped to [CLIP, 1 - CLIP] when a held-out fold is scored."""
LC_COLUMNS = ("lc_win_rate", "win_rate_vs_baseline")
"""The columns ``--length-control`` appends to the leaderboard table (fractions in [0, 1])."""
MAX_NEWTON = 200


@dataclass(frozen=True)
class LengthFit:
    """One model's GLM against the baseline: the LC win rate sigmoid(``intercept``), the weight of the
    tanh length term (positive: a longer answer than the baseline's wins more often), the chosen C and
    the number of verdicts fitted."""

    lc_win_rate: float
    length_coef: float
    intercept: float
    c: float
    n_fitted: int


def _sigmoid(z: np.ndarray | float) -> Any:
    return np.exp(-np.logaddexp(0.0, -z))


def _objective(X: np.ndarray, y: np.ndarray, C: float, w: np.ndarray) -> float:
    """||w||_1 + C * sum of cross-entropies of the soft labels y under sigmoid(X w)."""
    z = X @ w
    return float(np.abs(w).sum() + C * np.sum(np.logaddexp(0.0, z) - y * z))


def _l1_quadratic_step(g: np.ndarray, H: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The exact minimiser v of g.(v - w) + 1/2 (v - w)' H (v - w) + ||v||_1 over two coordinates: each
    coordinate is zero, positive or negative; on each of the nine pieces the quadratic's stationary
    point is solved in closed form and kept if its signs agree; the smallest kept value wins."""
    best, best_val = np.zeros(2), -float(g @ w) + 0.5 * float(w @ H @ w)  # v = 0
    for s0 in (0, 1, -1):
        for s1 in (0, 1, -1):
            if s0 == 0 and s1 == 0:
                continue
            free = [j for j, s in ((0, s0), (1, s1)) if s != 0]
            sign = np.array([s0, s1], dtype=float)
            rhs = H @ w - g - sign  # on the piece: H_FF v_F = (H w - g - sign)_F with v_Z = 0
            v = np.zeros(2)
            if len(free) == 2:
                det = H[0, 0] * H[1, 1] - H[0, 1] * H[1, 0]
                if not det > 0:
                    continue
                v[0] = (rhs[0] * H[1, 1] - H[0, 1] * rhs[1]) / det
                v[1] = (H[0, 0] * rhs[1] - H[1, 0] * rhs[0]) / det
            else:
                j = free[0]
                if not H[j, j] > 0:
                    continue
                v[j] = rhs[j] / H[j, j]
            if any(np.sign(v[j]) != sign[j] for j in free):
                continue
            d = v - w
            val = float(g @ d + 0.5 * d @ H @ d + np.abs(v).sum())
            if val < best_val:
                best, best_val = v, val
    return best


def l1_logistic(X: np.ndarray, y: np.ndarray, C: float, w0: np.ndarray | None = None) -> np.ndarray:
    """argmin over w of ||w||_1 + C * sum_i CE(y_i, sigmoid(X_i w)) for two columns, to machine precision.

    Proximal Newton: each step minimises the L1 norm plus the loss's second-order model exactly
    (``_l1_quadratic_step``), then halves until the objective falls by a hundredth of the model's
    decrease. The objective is convex, so the fixed point is its minimum."""
    w = np.zeros(2) if w0 is None else np.array(w0, dtype=float)
    f = _objective(X, y, C, w)
    for _ in range(MAX_NEWTON):
        q = _sigmoid(X @ w)
        g = C * (X.T @ (q - y))
        H = C * ((X * (q * (1.0 - q))[:, None]).T @ X)
        d = _l1_quadratic_step(g, H, w) - w
        decrease = float(g @ d + np.abs(w + d).sum() - np.abs(w).sum())
        if not decrease < 0 or np.max(np.abs(d)) <= 1e-13 * (1.0 + np.max(np.abs(w))):
            break
        t = 1.0
        while t > 1e-12:
            f_new = _objective(X, y, C, w + t * d)
            if f_new <= f + 0.01 * t * decrease:
                break
            t *= 0.5
        else:
            break
        w, f = w + t * d, f_new
    return w


def folds(m: int) -> np.ndarray:
    """Fold number of each of m rows: the k-th row goes to fold (m - 1 - k) mod 5 (GroupKFold's
    assignment for m groups of equal size: the groups in reverse order, each to the lightest fold)."""
    return (m - 1 - np.arange(m)) % N_FOLDS


def cross_entropy(y: np.ndarray, q: np.ndarray) -> float:
    """Mean cross-entropy of soft labels y under predictions q clipped to [CLIP, 1 - CLIP]."""
    q = np.clip(q, CLIP, 1.0 - CLIP)
    return float(-np.mean(y * np.log(q) + (1.0 - y) * np.log(1.0 - q)))


def choose_c(X: np.ndarray, y: np.ndarray) -> float:
    """The C of ``CS`` with the smallest held-out cross-entropy summed over the five folds (the first
    such C on a tie)."""
    fold = folds(len(y))
    score = np.zeros(len(CS))
    for k in range(N_FOLDS):
        train, test = fold != k, fold == k
        w = None
        for i, C in enumerate(CS):
            w = l1_logistic(X[train], y[train], float(C), w)
            score[i] += cross_entropy(y[test], _sigmoid(X[test] @ w))
    return float(CS[int(np.argmin(score))])


def standardised_length(delta: np.ndarray) -> np.ndarray:
    """tanh(d / sd(d)) with the sample standard deviation (ddof 1) over the finite d; an sd of 0 or
    fewer than two lengths carry no length information and give 0."""
    finite = delta[np.isfinite(delta)]
    sd = float(np.std(finite, ddof=1)) if finite.size > 1 else 0.0
    if not sd > 0:
        return np.zeros_like(delta)
    return np.tanh(delta / sd)


def fit_length_control(y: np.ndarray, delta: np.ndarray) -> LengthFit | None:
    """The GLM of one model against the baseline: y the model's preference per verdict (NaN: invalid),
    delta its answer length minus the baseline's (NaN: a text missing). None with fewer than five
    verdicts to fit (five folds)."""
    x_len = standardised_length(np.asarray(delta, dtype=float))
    fit = np.isfinite(y) & np.isfinite(x_len)
    if fit.sum() < N_FOLDS:
        return None
    X = np.column_stack([x_len[fit], np.ones(int(fit.sum()))])
    yy = np.asarray(y, dtype=float)[fit]
    C = choose_c(X, yy)
    w = l1_logistic(X, yy, C)
    return LengthFit(lc_win_rate=float(_sigmoid(w[1])), length_coef=float(w[0]), intercept=float(w[1]),
                     c=C, n_fitted=int(fit.sum()))


def baseline_rows(store: Store, dataset: str, baseline: str, judge: str | None = None,
                  category: str | None = None) -> pd.DataFrame:
    """One row per verdict between ``baseline`` and another model, in stored order: ``model``,
    ``preference`` (P(model beats baseline): the soft preference where stored, else 1 / 0 / 0.5 from
    the winner, NaN for an invalid verdict) and ``delta_chars`` (the model's answer length minus the
    baseline's in characters, NaN where a text is missing)."""
    v = store.verdicts(dataset, judge=judge, category=category,
                       columns=["prompt_id", "variant", "turn", "model_a", "model_b", "winner", "prob_a"])
    models = set(v["model_a"].dropna()) | set(v["model_b"].dropna())
    if baseline not in models:
        raise LensError(
            f"--baseline {baseline!r} is not a model of dataset {dataset!r}"
            f"{' with these filters' if judge or category else ''}; its models are "
            f"{', '.join(sorted(models)[:12]) or 'none'}{' …' if len(models) > 12 else ''}."
        )
    v = v[(v["model_a"] == baseline) | (v["model_b"] == baseline)]
    base_is_a = (v["model_a"] == baseline).to_numpy()
    winner = v["winner"].astype(object).to_numpy()
    p_a = v["prob_a"].astype("float64").to_numpy()
    hard = np.select([winner == "A", winner == "B", winner == "tie"], [1.0, 0.0, 0.5], np.nan)
    p_a = np.where(np.isnan(p_a), hard, p_a)
    p_a = np.where(winner == "invalid", np.nan, p_a)
    key = ["prompt_id", "variant", "turn"]
    lengths = _answer_lengths(store, dataset)
    rows = pd.DataFrame({
        "model": np.where(base_is_a, v["model_b"].astype(object), v["model_a"].astype(object)),
        "preference": np.where(base_is_a, 1.0 - p_a, p_a),
        **{k: v[k].to_numpy() for k in key},
    })
    own = rows.merge(lengths, on=[*key, "model"], how="left")["n_chars"].to_numpy(dtype=float)
    base = rows.assign(model=baseline).merge(lengths, on=[*key, "model"], how="left")["n_chars"]
    rows["delta_chars"] = own - base.to_numpy(dtype=float)
    return rows[["model", "preference", "delta_chars"]]


def _answer_lengths(store: Store, dataset: str) -> pd.DataFrame:
    """Length in characters (Unicode code points, as Python's len) of each stored answer."""
    return store.cursor().execute(
        "SELECT prompt_id, variant, turn, model, length(text) AS n_chars FROM answers "
        "WHERE dataset = ? AND text IS NOT NULL", [dataset]
    ).df().astype({"prompt_id": "string", "variant": "int64", "turn": "int64", "model": "object",
                   "n_chars": "float64"})


def length_controlled(rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per model: ``lc_win_rate``, ``win_rate_vs_baseline``, the fit's ``length_coef`` and ``c``,
    ``n_verdicts`` (valid verdicts against the baseline) and ``n_fitted``. The baseline itself has 0.5
    for both rates (AlpacaEval's convention: a model against itself)."""
    out = [{"model": baseline, "lc_win_rate": 0.5, "win_rate_vs_baseline": 0.5, "length_coef": 0.0,
            "c": math.nan, "n_verdicts": 0, "n_fitted": 0}]
    for model, g in rows.groupby("model", sort=True):
        y, delta = g["preference"].to_numpy(float), g["delta_chars"].to_numpy(float)
        valid = np.isfinite(y)
        fit = fit_length_control(y, delta)
        out.append({
            "model": model,
            "lc_win_rate": math.nan if fit is None else fit.lc_win_rate,
            "win_rate_vs_baseline": float(y[valid].mean()) if valid.any() else math.nan,
            "length_coef": math.nan if fit is None else fit.length_coef,
            "c": math.nan if fit is None else fit.c,
            "n_verdicts": int(valid.sum()),
            "n_fitted": 0 if fit is None else fit.n_fitted,
        })
    return pd.DataFrame(out)


@dataclass(frozen=True)
class LengthControlTable:
    """Per model (``length_controlled``'s frame, indexed by model) and the sentences a reader needs."""

    frame: pd.DataFrame
    notes: list[str]


def length_control_table(store: Store, dataset: str, baseline: str, judge: str | None = None,
                         category: str | None = None) -> LengthControlTable:
    """The LC win rate and plain win rate of every model against ``baseline`` in the selection, with
    notes: what the number leaves out, and the models it could not fit. Refuses a selection where no
    verdict against the baseline carries both answer texts."""
    rows = baseline_rows(store, dataset, baseline, judge=judge, category=category)
    if not np.isfinite(rows["delta_chars"]).any():
        raise LensError(
            "The length-controlled win rate needs the answer texts of both sides; no verdict against "
            f"{baseline!r} in dataset {dataset!r} has both stored (AlpacaEval annotation files carry them "
            "as output_1 and output_2)."
        )
    lc = length_controlled(rows, baseline).set_index("model")
    notes = [
        f"length control: LC win rate against {baseline} from AlpacaEval's GLM without its instruction-"
        "difficulty and gamed-baseline terms (they need AlpacaEval's own downloaded data); length = "
        "characters of the answer texts."
    ]
    unfitted = sorted(str(m) for m in lc.index[(lc.index != baseline) & ~np.isfinite(lc["lc_win_rate"])])
    if unfitted:
        notes.append(f"length control: no LC win rate for {', '.join(unfitted)} (fewer than {N_FOLDS} "
                     f"verdicts against {baseline} with both answer texts).")
    return LengthControlTable(lc, notes)


def length_control_columns(frame: pd.DataFrame, lct: LengthControlTable) -> pd.DataFrame:
    """``frame`` (one row per ``model``) with ``LC_COLUMNS`` appended from ``lct`` (NaN for a model
    without a fit): the CLI's table and the Leaderboard page both take their columns from here."""
    out = frame.copy()
    models = out["model"].astype(object)
    for col in LC_COLUMNS:
        out[col] = models.map(lct.frame[col]).astype("float64").to_numpy()
    return out


def with_length_control(board: Leaderboard, store: Store, dataset: str, baseline: str,
                        judge: str | None = None, category: str | None = None) -> Leaderboard:
    """``board`` with ``lc_win_rate`` and ``win_rate_vs_baseline`` appended to its table and the fits'
    details under ``params["length_control"]`` (baseline, per-model C, length weight, verdicts fitted,
    notes)."""
    lct = length_control_table(store, dataset, baseline, judge=judge, category=category)
    table = length_control_columns(board.table, lct)
    notes = list(lct.notes)
    if board.params.get("keep_k") is not None:
        notes.append("length control: fitted on every verdict of the selection against the baseline; "
                     "keep-K chooses the graphs of the ranking only.")
    fitted = lct.frame[lct.frame["n_fitted"] > 0]
    params = {**board.params, "length_control": {
        "baseline": baseline,
        "length": "characters",
        "terms": ["tanh(standardised length difference)", "intercept"],
        "c": {str(m): float(c) for m, c in fitted["c"].items()},
        "length_coef": {str(m): float(c) for m, c in fitted["length_coef"].items()},
        "n_fitted": {str(m): int(n) for m, n in fitted["n_fitted"].items()},
        "notes": notes,
    }}
    return replace(board, rows=table, params=params)
