"""The comparison graph's components by ``pair_components`` (a numpy union-find) equal scipy's csgraph.

Why: the leaderboard labels each model with its component of the comparison graph; csgraph was the
one reason the plain ``leaderboard`` imported scipy, so the components are now found in numpy
(issue 26, point 5). Same partition and same labels as csgraph followed by the board's rule (1 = the
most models, equal sizes by their first model) on random graphs: disconnected, one node, no node,
self-loops, repeated pairs, pairs in either orientation, and long paths listed backwards (the most
union-find rounds).
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from engine.graphs.reachability import comparison_components, pair_components
from engine.ranking.board import components_of


def csgraph_labels(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The second path: csgraph's components, numbered by size (largest first), then by first model."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    graph = sparse.coo_matrix((np.ones(lo.size, dtype=np.int8), (lo, hi)), shape=(n, n)).tocsr()
    _, raw = connected_components(graph, directed=False)
    sizes = np.bincount(raw)
    firsts = [int(np.flatnonzero(raw == c)[0]) for c in range(sizes.size)]
    order = sorted(range(sizes.size), key=lambda c: (-sizes[c], firsts[c]))
    label_of = {c: k + 1 for k, c in enumerate(order)}
    return np.array([label_of[c] for c in raw], dtype=np.int64)


@st.composite
def graphs(draw):
    n = draw(st.integers(0, 30))
    if n == 0:
        return 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    lo = np.array([p[0] for p in pairs], dtype=np.int64)
    hi = np.array([p[1] for p in pairs], dtype=np.int64)
    return n, lo, hi


@settings(max_examples=150, deadline=None)  # n <= 30 with up to 3n pairs: 150 draws cover every class
@given(graphs())
@example((0, np.zeros(0, np.int64), np.zeros(0, np.int64)))  # no model
@example((1, np.zeros(0, np.int64), np.zeros(0, np.int64)))  # one model, never compared
@example((3, np.array([1, 1]), np.array([1, 1])))  # only a self-pair, repeated
def test_pair_components_equal_csgraph(graph):
    n, lo, hi = graph
    want = csgraph_labels(n, lo, hi)
    np.testing.assert_array_equal(pair_components(n, lo, hi), want)
    np.testing.assert_array_equal(pair_components(n, hi, lo), want)  # orientation does not matter
    dense = np.zeros((n, n), dtype=bool)
    dense[lo, hi] = True
    np.testing.assert_array_equal(comparison_components(dense), want)
    stored = sparse.coo_matrix((np.ones(lo.size, dtype=np.int8), (lo, hi)), shape=(n, n))
    np.testing.assert_array_equal(comparison_components(stored), want)


def test_long_paths_listed_backwards_and_isolated_models():
    """Two paths of 500 models each, their pairs listed from the far end, plus 3 models never compared:
    every hook and pointer jump has to reach the path's first model."""
    n = 1003
    lo = np.concatenate([np.arange(498, -1, -1), np.arange(998, 499, -1)])
    hi = lo + 1
    label = pair_components(n, lo, hi)
    np.testing.assert_array_equal(label, csgraph_labels(n, lo, hi))
    assert label[:500].tolist() == [1] * 500 and label[500:1000].tolist() == [2] * 500
    assert label[1000:].tolist() == [3, 4, 5]


def test_the_board_reads_a_pair_list_as_it_reads_the_matrix():
    """``components_of`` with (lo, hi) (the count board) names the same components as with the matrix."""
    models = [f"m{i}" for i in range(7)]
    lo, hi = np.array([0, 2, 5]), np.array([1, 3, 6])
    dense = np.zeros((7, 7), dtype=bool)
    dense[lo, hi] = True
    by_pairs, by_matrix = components_of((lo, hi), models), components_of(dense, models)
    np.testing.assert_array_equal(by_pairs[0], by_matrix[0])
    assert by_pairs[1] == by_matrix[1] == [["m0", "m1"], ["m2", "m3"], ["m5", "m6"], ["m4"]]
