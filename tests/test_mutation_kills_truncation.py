"""Keep-K's default weights (mutation pass survivors): without ``mu`` and ``lam3`` a graph's raw score
is S = C3_bad + C4_bad (paper 000: mu = 1 by default), checked on every graph against its own counts."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from engine.graphs.stack import build_stack
from engine.graphs.truncation import keep_k_graphs


def random_tournaments(seed: int = 2, n_prompts: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(6)]
    rows = [
        {
            "dataset": "d",
            "judge": "j",
            "prompt_id": f"p{p}",
            "variant": 0,
            "turn": 1,
            "category": f"c{p % 2}",
            "variant_kind": "original",
            "prob_a": np.nan,
            "model_a": a,
            "model_b": b,
            "winner": rng.choice(["A", "B", "tie"], p=[0.45, 0.45, 0.1]),
        }
        for p in range(n_prompts)
        for a, b in itertools.combinations(models, 2)
    ]
    return pd.DataFrame(rows)


def test_the_default_raw_score_weighs_both_cycle_lengths_one():
    stack = build_stack(random_tournaments())
    kept = keep_k_graphs(stack, stack.T, score="raw")
    t = kept.table
    assert len(t) == stack.T and (t["c3_bad"] > 0).any() and (t["c4_bad"] > 0).any()
    np.testing.assert_array_equal(t["raw_score"].to_numpy(), (t["c3_bad"] + t["c4_bad"]).to_numpy())
    np.testing.assert_array_equal(t["score"].to_numpy(), t["raw_score"].to_numpy())
    assert t["score"].is_monotonic_increasing
    # and the defaults are the explicit mu = lam3 = 1
    same = keep_k_graphs(stack, 7, mu=1.0, lam3=1.0)
    np.testing.assert_array_equal(keep_k_graphs(stack, 7).index, same.index)


def test_a_known_variant_kind_decides_the_pools_not_the_variant_id():
    """Where the kind is stored it decides: an original numbered 2 is in the sampling pool, a
    replicate numbered 0 is not an original (so not in the perturbed pool); the variant id decides
    only where no kind is stored (kills truncation L168: originals read from the id alone)."""
    from engine.graphs.truncation import pool_mask

    kinds = ["original", "sample", "original", "paraphrase"]
    keys = pd.DataFrame({"variant": [0, 0, 2, 1], "variant_kind": kinds})
    by_kind = {
        "perturbed": [k != "sample" for k in keys["variant_kind"]],
        "sampling": [k in ("original", "sample") for k in keys["variant_kind"]],
        "all": [True] * 4,
    }
    for pool, want in by_kind.items():
        np.testing.assert_array_equal(pool_mask(keys, pool), np.array(want), err_msg=pool)
    no_kind = keys[["variant"]]  # kind unknown: variant 0 is the original, nothing is a replicate
    np.testing.assert_array_equal(pool_mask(no_kind, "sampling"), np.array([True, True, False, False]))
    np.testing.assert_array_equal(pool_mask(no_kind, "perturbed"), np.ones(4, dtype=bool))
