"""``results_zip`` without an explicit ``mu`` scores graphs with the paper's default mu = 1 (mutation
pass survivor: the default was free to change; the app passes its own MU_DEFAULT, the tests passed mu
explicitly)."""

from __future__ import annotations

import io
import itertools
import zipfile

import numpy as np
import pandas as pd

from engine.graphs.stack import build_stack
from engine.views.exports import results_zip
from engine.views.viz import cycle_overview


def random_verdicts(seed: int = 3, n_prompts: int = 10) -> pd.DataFrame:
    """Random round-robin tournaments (ties included) of five models, one judge."""
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(5)]
    rows = [
        {
            "prompt_id": f"p{p}",
            "model_a": a,
            "model_b": b,
            "winner": rng.choice(["A", "B", "tie"], p=[0.45, 0.45, 0.1]),
            "judge": "j",
            "category": "c",
            "order": "AB",
        }
        for p in range(n_prompts)
        for a, b in itertools.combinations(models, 2)
    ]
    df = pd.DataFrame(rows)
    df["dataset"], df["variant"], df["turn"], df["variant_kind"], df["prob_a"] = "d", 0, 1, "original", np.nan
    return df


def test_results_zip_scores_graphs_with_mu_one_by_default():
    ov = cycle_overview(build_stack(random_verdicts()))
    assert (ov.graphs["c4_bad"] > 0).any()  # mu matters on this data
    with zipfile.ZipFile(io.BytesIO(results_zip(overview=ov))) as zf:
        graphs = pd.read_csv(zf.open("graphs.csv"), dtype={"prompt_id": str})
    s_one = ov.graphs["c3_bad"] + 1.0 * ov.graphs["c4_bad"]
    assert graphs["s_mu"].tolist() == sorted(s_one, reverse=True)
    by_prompt = dict(zip(ov.graphs["prompt_id"], s_one, strict=True))
    assert all(by_prompt[p] == s for p, s in zip(graphs["prompt_id"], graphs["s_mu"], strict=True))
