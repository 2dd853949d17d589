"""PNT's secondary paths (mutation pass survivors): the heatmap's default win rates with ties, soft
PNT over size buckets, and the smoothing bound; each against a loop over the verdicts or the
other path."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine.diagnostics.nontransitivity import gap_heatmap, model_win_rates, pnt_triples, soft_stack
from engine.errors import LensError
from engine.graphs.buckets import as_buckets
from engine.graphs.stack import build_stack

MODELS = ("a", "b", "c", "d", "e")


def verdicts(seed: int = 5, n_prompts: int = 8) -> pd.DataFrame:
    """Random tournaments with many ties and a judge probability on most rows; prompts of 3-5 models."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        members = MODELS[: 3 + p % 3]
        for a, b in itertools.combinations(members, 2):
            prob = float(rng.uniform(0.3, 0.7))
            winner = "tie" if abs(prob - 0.5) < 0.06 else ("A" if prob > 0.5 else "B")
            rows.append(
                {
                    "dataset": "d",
                    "judge": "j",
                    "prompt_id": f"p{p}",
                    "variant": 0,
                    "turn": 1,
                    "category": "c",
                    "variant_kind": "original",
                    "model_a": a,
                    "model_b": b,
                    "winner": winner,
                    "prob_a": prob if rng.random() < 0.9 else np.nan,
                }
            )
    return pd.DataFrame(rows)


def test_default_win_rates_count_a_tie_as_half_a_win():
    v = verdicts()
    assert (v["winner"] == "tie").sum() >= 5
    points, games = dict.fromkeys(MODELS, 0.0), dict.fromkeys(MODELS, 0)
    for r in v.itertuples():
        pa = {"A": 1.0, "B": 0.0, "tie": 0.5}[r.winner]
        points[r.model_a] += pa
        points[r.model_b] += 1.0 - pa
        games[r.model_a] += 1
        games[r.model_b] += 1
    got = model_win_rates(build_stack(v))
    assert got.to_dict() == pytest.approx({m: points[m] / games[m] for m in MODELS}, abs=1e-12)


def test_soft_pnt_over_buckets_equals_soft_pnt_over_the_stack():
    stack = build_stack(verdicts())
    buckets = as_buckets(stack)
    assert buckets.has_soft
    by_stack = pnt_triples(soft_stack(stack), source="hard").sort_values(
        ["graph", "model_a", "model_b", "model_c"]
    )
    by_buckets = pnt_triples(soft_stack(buckets), source="hard").sort_values(
        ["graph", "model_a", "model_b", "model_c"]
    )
    assert len(by_stack) > 0
    pd.testing.assert_frame_equal(
        by_stack.reset_index(drop=True),
        by_buckets.reset_index(drop=True),
        check_dtype=False,
        check_categorical=False,
    )
    hard_only = build_stack(verdicts().assign(prob_a=np.nan))
    with pytest.raises(LensError, match="no judge probabilities"):
        soft_stack(as_buckets(hard_only))


def test_heatmap_smoothing_takes_any_sigma_from_zero_up():
    stack = build_stack(verdicts())
    n_triples = len(pnt_triples(stack).groupby(["model_a", "model_b", "model_c"]))
    for sigma in (0.0, 0.5, 2.0):
        hm = gap_heatmap(stack, grid=7, sigma=sigma)
        assert hm["triples"].sum() == 6 * n_triples  # every orientation of every triple placed once
    with pytest.raises(LensError, match="at least 0"):
        gap_heatmap(stack, grid=7, sigma=-0.1)
