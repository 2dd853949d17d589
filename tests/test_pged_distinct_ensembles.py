"""Per-prompt PGED ranks each distinct question ensemble once (``engine.rankers.pged.distinct_ensembles``)
and its bootstrap checks "every graph of a question drawn equally often" by sorted segments: both
against the old path, every question ranked on its own (``distinct_ensembles`` switched to one group per
row), on shapes where many questions repeat one ensemble (one pair per prompt, repeats) and where none
do (several judges and variants, a sparse 70-model set)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graphs.stack import build_stack
from engine.rankers import pged as pged_module
from engine.rankers import rank
from engine.ranking.bootstrap import bootstrap
from tests.seam_data import Shape, verdicts

SHAPES = (
    Shape(seed=11, n_models=5, n_prompts=60, judges=1, one_pair=True, orders="AB", repeats=True, tie_p=0.15),
    Shape(seed=12, n_models=4, n_prompts=40, judges=2, one_pair=True, orders="both"),
    Shape(seed=13, n_models=5, n_prompts=6, judges=3, paraphrases=1, samples=1, orders="mixed"),
    Shape(seed=14, n_prompts=30, sparse=True, judges=2, orders="none"),
)


def every_row_alone(wq, present):
    """The old path: each question ranked on its own."""
    G = wq.shape[0]
    return np.arange(G), np.arange(G)


def fits(stack, params: dict, unit: str):
    """(point fit, bootstrap) of PGED on the stack."""
    return rank(stack, "pged", **params), bootstrap(stack, "pged", 15, 3, unit=unit, **params)


@pytest.mark.parametrize("shape", SHAPES, ids=["one-pair-repeats", "one-pair-judges", "variants", "sparse70"])
@pytest.mark.parametrize("params,unit", [({}, "prompt"), ({}, "graph"), ({"aggregate": "kemeny"}, "prompt"),
                                         ({"fas": "exact", "prompt_ties": "name"}, "graph")])
def test_distinct_ensembles_give_the_old_numbers(monkeypatch, shape, params, unit):
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    new, new_boot = fits(stack, params, unit)
    monkeypatch.setattr(pged_module, "distinct_ensembles", every_row_alone)
    old, old_boot = fits(stack, params, unit)
    np.testing.assert_array_equal(new.scores.to_numpy(), old.scores.to_numpy())
    assert new.details == old.details
    assert new.extras["order"] == old.extras["order"]
    assert new.extras["removed"] == old.extras["removed"]
    assert new.extras["graph"].equals(old.extras["graph"])
    assert new.extras["prompt_descendants"].equals(old.extras["prompt_descendants"])
    np.testing.assert_array_equal(new_boot.samples, old_boot.samples)
    assert new_boot.method == old_boot.method
    q_of_t = pged_module.question_ids(stack)[0]  # brute force: questions of one graph, or whole prompts drawn
    fixed = unit == "prompt" or np.bincount(q_of_t).max() == 1
    assert ("fixed per-question rankings" in new_boot.method) == fixed, new_boot.method


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), G=st.integers(1, 40), n=st.integers(1, 4), values=st.integers(1, 3))
def test_distinct_ensembles_group_exactly_the_equal_rows(seed, G, n, values):
    """Rows share a group exactly when they are equal (brute force over every pair of rows)."""
    rng = np.random.default_rng(seed)
    wq = rng.integers(0, values, (G, n, n)).astype(np.float64) * 0.5
    present = rng.integers(0, 2, (G, n)).astype(bool)
    first, inverse = pged_module.distinct_ensembles(wq, present)
    for a in range(G):
        assert np.array_equal(wq[a], wq[first[inverse[a]]]) and np.array_equal(present[a],
                                                                               present[first[inverse[a]]])
        for b in range(G):
            same = np.array_equal(wq[a], wq[b]) and np.array_equal(present[a], present[b])
            assert same == (inverse[a] == inverse[b])
