"""beta's sandwich standard errors with and without the ridge in the Hessian's beta block, printed beside
what `leaderboard --style-control` computes (docs/notes/audit-24.md). Runs the CLI in this process with
engine.ranking.style_board's sandwich wrapped; the board itself is unchanged.

    LENS_DB=STORE PYTHONPATH=. python bench/audit24_beta_sandwich.py DATASET
"""

from __future__ import annotations

import runpy
import sys

import numpy as np
from scipy.special import expit

import engine.rankers.sandwich as sandwich
import engine.ranking.style_board as style_board


def beta_se_with_ridge(bt, fit, design, ridge: float = sandwich.RIDGE) -> np.ndarray:
    """H^-1 G H^-1 with H the penalised loss's Hessian (the ridge added on the beta block)."""
    n, N = bt.n, len(bt)
    b = design.bt
    p = expit(fit.theta[b.a] - fit.theta[b.b] + b.x @ fit.beta)
    H = sandwich.assemble(*design.blocks(p * (1.0 - p) * b.w / N)[:3])
    H[np.diag_indices_from(H)] += sandwich.HESSIAN_REG
    H[np.arange(n, H.shape[0]), np.arange(n, H.shape[0])] += ridge
    G = sandwich.assemble(*design.blocks(((b.y - p) * b.w) ** 2 / N)[:3])
    vec = np.concatenate([np.zeros(n), fit.beta])
    G -= (ridge ** 2 / N) * np.outer(vec, vec)
    return np.sqrt(np.maximum(sandwich.sandwich_diagonal(H, G) / N, 0.0))[n:]


def main() -> None:
    original = sandwich.style_sandwich

    def reporting(bt, fit, *, design=None, **kw):
        design = design or sandwich.design_of(bt)
        se_theta, se_beta = original(bt, fit, design=design, **kw)
        print(f"beta se, H without the ridge (the board's): {np.round(se_beta, 5)}", file=sys.stderr)
        penalised = beta_se_with_ridge(bt, fit, design)
        print(f"beta se, H with the ridge on beta:           {np.round(penalised, 5)}", file=sys.stderr)
        return se_theta, se_beta

    style_board.style_sandwich = reporting
    sys.argv = ["engine", "leaderboard", "--dataset", sys.argv[1], "--style-control", "--format", "csv"]
    runpy.run_module("engine", run_name="__main__")


if __name__ == "__main__":
    main()
