"""Peer process for the product benchmark: a FastChat-style bootstrap of a BT leaderboard.

    python bench/peer_fastchat.py BATTLES.parquet [--rounds 100] [--seed 0]

Written from the public description of FastChat's Elo analysis (no code taken from it): read the
battles with pandas; each round draws as many battles as there are, with replacement
(``DataFrame.sample(frac=1, replace=True)``), counts wins per ordered pair (a tie is half a win each
way), and fits a Bradley-Terry model as a logistic regression on those counts (here by L-BFGS,
FastChat uses scikit-learn's solver); the interval is the 2.5-97.5 % quantile of the rounds'
ratings on the Elo scale (400 log10 + 1000). Prints the models with their median and interval.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.optimize import minimize


def win_matrix(df: pd.DataFrame, models: pd.Index) -> np.ndarray:
    """W[i, j] = wins of i over j, a tie counted as half a win for each side."""
    a = models.get_indexer(df["model_a"])
    b = models.get_indexer(df["model_b"])
    w = df["winner"].to_numpy()
    first = np.isin(w, ["A", "model_a"])
    second = np.isin(w, ["B", "model_b"])
    tie = ~(first | second)
    n = len(models)
    W = np.zeros((n, n))
    np.add.at(W, (a[first], b[first]), 1.0)
    np.add.at(W, (b[second], a[second]), 1.0)
    np.add.at(W, (a[tie], b[tie]), 0.5)
    np.add.at(W, (b[tie], a[tie]), 0.5)
    return W


def fit_bt(W: np.ndarray) -> np.ndarray:
    """Log strengths maximising sum W_ij log sigmoid(t_i - t_j), centred (logistic regression)."""
    i, j = np.nonzero(W)
    c = W[i, j]
    n = W.shape[0]

    def loss(t):
        d = t[i] - t[j]
        val = (c * np.logaddexp(0.0, -d)).sum()
        g = -c / (1.0 + np.exp(d))
        return val, np.bincount(i, g, n) - np.bincount(j, g, n)

    t = minimize(loss, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-9, "maxiter": 2000}).x
    return t - t.mean()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    df = pd.read_parquet(a.path, columns=["model_a", "model_b", "winner"])
    models = pd.Index(sorted(set(df["model_a"]) | set(df["model_b"])))
    rng = np.random.default_rng(a.seed)
    t0, rows = time.perf_counter(), []
    for _ in range(a.rounds):
        sample = df.sample(frac=1.0, replace=True, random_state=rng)
        rows.append(fit_bt(win_matrix(sample, models)))
    elo = 400 * np.vstack(rows) / np.log(10) + 1000
    lo, mid, hi = np.quantile(elo, [0.025, 0.5, 0.975], axis=0)
    print(f"# rounds={a.rounds} seconds_in_rounds={time.perf_counter() - t0:.2f}")
    print("model,elo,ci_low,ci_high")
    for k in np.argsort(-mid)[:5]:
        print(f"{models[k]},{mid[k]:.1f},{lo[k]:.1f},{hi[k]:.1f}")


if __name__ == "__main__":
    main()
