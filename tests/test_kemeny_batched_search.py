"""Kemeny beyond its exact limit: the local search of all B resamples at once
(``engine.rankers.kemeny.kemeny_local_batch``) and the bootstrap's evidence summed over distinct graphs
(``engine.rankers.graph_batch.pooled_sums``), each against the old path (``kemeny_local`` per resample, the
product over every graph): the same orders, the same sums to the bit, the same intervals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graphs.stack import build_stack
from engine.rankers import graph_batch, kemeny
from engine.ranking.bootstrap import bootstrap, graph_weights
from tests.seam_data import Shape, verdicts


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 15), B=st.integers(1, 5), halves=st.booleans())
def test_batched_local_search_equals_one_search_per_matrix(seed, n, B, halves):
    """Evidence in halves (ties everywhere: many equal gains) or arbitrary floats."""
    rng = np.random.default_rng(seed)
    C = rng.integers(0, 4, (B, n, n)) * 0.5 if halves else rng.random((B, n, n))
    got = kemeny.kemeny_local_batch(C)
    for b in range(B):
        assert got[b].tolist() == kemeny.kemeny_local(C[b])


SHAPES = (
    Shape(seed=21, n_models=14, n_prompts=80, one_pair=True, orders="AB", repeats=True),
    Shape(seed=22, n_prompts=30, sparse=True, judges=2, paraphrases=1, orders="both"),
)


@pytest.mark.parametrize("shape", SHAPES, ids=["one-pair-14", "sparse70"])
@pytest.mark.parametrize("params", [{}, {"source": "rankings"}, {"weights": {"j0": 2.0, "j1": 1.0}},
                                    {"weights": {"j0": 0.3, "j1": 1.7}}])
def test_kemeny_bootstrap_above_the_exact_limit_is_unchanged(monkeypatch, shape, params):
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    assert stack.n > 12
    new = bootstrap(stack, "kemeny", 12, 4, **params)
    weights = graph_weights(stack, 12, np.random.default_rng(4))
    g = weights * graph_batch.graph_weights(stack, params.get("weights"))[None]
    per_graph = (stack.wins + 0.5 * stack.ties if params.get("source", "pairs") == "pairs"
                 else graph_batch.ranking_above(stack))
    np.testing.assert_array_equal(graph_batch.pooled_sums(g, per_graph, graph_batch.graph_weights(
        stack, params.get("weights"))), graph_batch.weighted_sums(g, per_graph))
    monkeypatch.setattr(graph_batch, "pooled_sums", lambda g, per_graph, alpha: graph_batch.weighted_sums(
        g, per_graph))
    monkeypatch.setattr(kemeny, "kemeny_local_batch", lambda C: np.array(
        [kemeny.kemeny_local(C[b]) for b in range(C.shape[0])], dtype=np.int64).reshape(C.shape[:2]))
    old = bootstrap(stack, "kemeny", 12, 4, **params)
    np.testing.assert_array_equal(new.samples, old.samples)
    assert new.method == old.method
