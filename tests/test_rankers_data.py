"""Synthetic verdict tables for the ranker tests (no test here: helpers shared by tests/test_rankers*.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.graphs.stack import GraphStack, build_stack


def verdict_frame(rows: list[tuple], judge: str = "judge") -> pd.DataFrame:
    """rows: (prompt_id, model_a, model_b, winner[, prob_a]) → a canonical-enough verdict frame."""
    recs = []
    for r in rows:
        recs.append(
            {
                "dataset": "syn", "judge": judge, "prompt_id": str(r[0]), "variant": 0, "turn": 1,
                "category": "c", "variant_kind": "original", "model_a": r[1], "model_b": r[2],
                "winner": r[3], "prob_a": r[4] if len(r) > 4 else np.nan,
            }
        )
    return pd.DataFrame(recs)


def bt_verdicts(theta: np.ndarray, n_prompts: int, seed: int, tie_nu: float = 0.0, models=None,
                pairs_per_prompt: int | None = None) -> pd.DataFrame:
    """Round-robin prompts sampled from Davidson(theta, nu) (nu = 0: plain BT), one verdict per pair."""
    rng = np.random.default_rng(seed)
    n = len(theta)
    models = models or [f"m{i:02d}" for i in range(n)]
    iu, ju = np.triu_indices(n, 1)
    rows = []
    for p in range(n_prompts):
        sel = (
            np.arange(len(iu))
            if pairs_per_prompt is None
            else rng.choice(len(iu), pairs_per_prompt, replace=False)
        )
        for k in sel:
            i, j = iu[k], ju[k]
            a, b = np.exp(theta[i]), np.exp(theta[j])
            t = tie_nu * np.sqrt(a * b)
            u = rng.random() * (a + b + t)
            w = "A" if u < a else ("B" if u < a + b else "tie")
            rows.append((f"p{p}", models[i], models[j], w))
    return verdict_frame(rows)


def stack_from_wt(W: np.ndarray, T: np.ndarray | None = None, models=None) -> GraphStack:
    """A stack whose graphs hold exactly W wins and T ties (one pair outcome per graph)."""
    n = W.shape[0]
    models = models or [f"m{i:02d}" for i in range(n)]
    T = np.zeros_like(W) if T is None else T
    rows, g = [], 0
    for i in range(n):
        for j in range(n):
            for _ in range(int(W[i, j])):
                rows.append((f"g{g}", models[i], models[j], "A"))
                g += 1
            if i < j:
                for _ in range(int(T[i, j])):
                    rows.append((f"g{g}", models[i], models[j], "tie"))
                    g += 1
    return build_stack(verdict_frame(rows))
