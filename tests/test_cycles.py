"""engine.graphs.cycles: closed-form batched counts against brute-force enumeration and networkx."""

from __future__ import annotations

import itertools
from math import comb

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.graphs.cycles import (
    COUNT_COLUMNS,
    cycle_counts,
    cycle_counts_arrays,
    pair_cycle_counts,
    vertex_cycle_counts,
)
from engine.graphs.stack import build_stack


def random_graphs(rng: np.random.Generator, T: int, n: int) -> np.ndarray:
    """T random graphs on n vertices: each pair missing, i>j, j>i or tied, rates varying per graph."""
    probs = rng.dirichlet(np.ones(4), size=T)  # (missing, i>j, j>i, tie) per graph
    cum = probs.cumsum(axis=1)
    u = rng.random((T, n, n))
    outcome = (u[..., None] > cum[:, None, None, :]).sum(axis=-1)  # 0..3
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    return adj


def brute_cycles_numpy(adj: np.ndarray, length: int) -> np.ndarray:
    """Directed simple cycles of a length per graph: all ordered tuples of distinct vertices whose
    consecutive edges (and closing edge) exist, divided by the `length` rotations of each cycle."""
    n = adj.shape[1]
    tuples = np.array(list(itertools.permutations(range(n), length)), dtype=np.int64).reshape(-1, length)
    ok = np.ones((adj.shape[0], len(tuples)), dtype=bool)
    for s in range(length):
        ok &= adj[:, tuples[:, s], tuples[:, (s + 1) % length]]
    total = ok.sum(axis=1)
    assert np.all(total % length == 0)
    return total // length


def brute_cycles_python(a: np.ndarray, length: int) -> int:
    """Paper 000, App. A.2 as written: every vertex subset, every directed cyclic orientation."""
    n, count = a.shape[0], 0
    for subset in itertools.combinations(range(n), length):
        first, rest = subset[0], subset[1:]
        for order in itertools.permutations(rest):
            seq = (first, *order)
            if all(a[seq[s], seq[(s + 1) % length]] for s in range(length)):
                count += 1
    return count


def check_against_numpy_brute(adj: np.ndarray) -> None:
    got = cycle_counts_arrays(adj)
    ties = adj & adj.swapaxes(1, 2)
    for name, m, length in (("c3", adj, 3), ("c4", adj, 4), ("c3_tie", ties, 3), ("c4_tie", ties, 4)):
        np.testing.assert_array_equal(got[name], brute_cycles_numpy(m, length), err_msg=name)
    np.testing.assert_array_equal(got["c3_bad"], got["c3"] - got["c3_tie"])
    np.testing.assert_array_equal(got["c4_bad"], got["c4"] - got["c4_tie"])


@pytest.mark.parametrize("n", range(3, 13))
def test_random_graphs_with_ties_and_missing_pairs_match_enumeration(n):
    rng = np.random.default_rng(1000 + n)
    T = 400 if n <= 8 else 120  # 6 x 400 + 4 x 120 = 2,880 graphs over n = 3..12
    check_against_numpy_brute(random_graphs(rng, T, n))


@pytest.mark.parametrize("threads", [1, 2])
def test_chunked_and_threaded_kernel_matches_enumeration(threads):
    """Several chunks of the stack (1,024 graphs each at n = 8), one chunk without a single tie
    (its B part is skipped), on one thread and on two: every count equals enumeration."""
    from engine.graphs.cycles import _CHUNK_BYTES

    rng = np.random.default_rng(99)
    n, T = 8, 3000
    assert _CHUNK_BYTES // (4 * n * n) < T / 2  # at least three chunks
    adj = random_graphs(rng, T, n)
    tie_free = slice(1024, 2048)  # exactly the second chunk
    adj[tie_free] &= ~adj[tie_free].swapaxes(1, 2) | np.triu(np.ones((n, n), dtype=bool))
    assert not (adj[tie_free] & adj[tie_free].swapaxes(1, 2)).any()
    got = cycle_counts_arrays(adj, threads=threads)
    ties = adj & adj.swapaxes(1, 2)
    for name, m, length in (("c3", adj, 3), ("c4", adj, 4), ("c3_tie", ties, 3), ("c4_tie", ties, 4)):
        np.testing.assert_array_equal(got[name], brute_cycles_numpy(m, length), err_msg=name)
    assert got["c3_tie"][tie_free].max() == 0 and got["c3_tie"].max() > 0


def all_graphs_on_4_vertices() -> np.ndarray:
    """Every graph on 4 labelled vertices: each of the 6 pairs missing, i>j, j>i or tied (4^6)."""
    pairs = list(itertools.combinations(range(4), 2))
    codes = np.array(list(itertools.product(range(4), repeat=len(pairs))))
    adj = np.zeros((len(codes), 4, 4), dtype=bool)
    for p, (i, j) in enumerate(pairs):
        adj[:, i, j] = (codes[:, p] == 1) | (codes[:, p] == 3)
        adj[:, j, i] = (codes[:, p] == 2) | (codes[:, p] == 3)
    return adj


def test_exhaustive_on_all_4096_graphs_with_4_vertices():
    adj = all_graphs_on_4_vertices()
    assert adj.shape == (4096, 4, 4)
    got = cycle_counts_arrays(adj)
    for t in range(len(adj)):
        a = adj[t]
        b = a & a.T
        expect = (brute_cycles_python(a, 3), brute_cycles_python(a, 4),
                  brute_cycles_python(b, 3), brute_cycles_python(b, 4))
        assert (got["c3"][t], got["c4"][t], got["c3_tie"][t], got["c4_tie"][t]) == expect, t
    # the per-graph counts take every value they can on 4 vertices: 4 triangles x 2 directions
    assert got["c3"].max() == 8 and got["c4"].max() == 6


def test_tournament_identity_without_ties():
    rng = np.random.default_rng(7)
    for n in (3, 5, 10, 20, 45):
        T = 50
        upper = rng.random((T, n, n)) < rng.random((T, 1, 1))
        adj = np.triu(upper, 1)
        adj = adj | np.triu(~upper, 1).swapaxes(1, 2)
        scores = adj.sum(axis=2)
        expect = comb(n, 3) - (scores * (scores - 1) // 2).sum(axis=1)
        got = cycle_counts_arrays(adj)
        np.testing.assert_array_equal(got["c3"], expect)
        np.testing.assert_array_equal(got["c3_tie"], 0)
        np.testing.assert_array_equal(got["c4_tie"], 0)


def test_all_tie_complete_graph_closed_forms():
    # n = 64: tr(A⁴) = 63⁴ + 63, the most closed 4-walks a 64-vertex graph has, just below 2^24,
    # the largest value summed in float32; n = 65 and 100 take the float64 sums
    for n in (3, 4, 7, 30, 64, 65, 100):
        adj = ~np.eye(n, dtype=bool)[None]
        got = cycle_counts_arrays(adj)
        assert got["c3"][0] == got["c3_tie"][0] == 2 * comb(n, 3)
        assert got["c4"][0] == got["c4_tie"][0] == 6 * comb(n, 4)
        assert got["c3_bad"][0] == got["c4_bad"][0] == 0


def test_networkx_simple_cycles_length_bound_4():
    rng = np.random.default_rng(3)
    adj = random_graphs(rng, 40, 9)
    got = cycle_counts_arrays(adj)
    for t in range(len(adj)):
        g = nx.DiGraph(adj[t].astype(int))
        lengths = pd.Series([len(c) for c in nx.simple_cycles(g, length_bound=4)], dtype=int)
        assert got["c3"][t] == int((lengths == 3).sum())
        assert got["c4"][t] == int((lengths == 4).sum())


@pytest.mark.parametrize("n", [64, 65, 300])
def test_large_n_float_accumulation_is_exact(n):
    """n = 65 and 300 put tr(A⁴) beyond float32's exact range (float64 sums; n = 64 is the last
    float32 one); compare with int64 matrix powers, ties and missing pairs included."""
    rng = np.random.default_rng(11 + n)
    adj = random_graphs(rng, 2, n)
    got = cycle_counts_arrays(adj)
    for t in range(2):
        a = adj[t].astype(np.int64)
        b = a * a.T
        d = b.sum(axis=1)
        a2 = a @ a
        assert got["c3"][t] * 3 == np.trace(a2 @ a)
        assert got["c4"][t] * 4 == np.trace(a2 @ a2) - 2 * (d * d).sum() + d.sum()


def test_diagonal_is_ignored_and_bad_shape_is_a_lens_error():
    adj = all_graphs_on_4_vertices()[:50]
    looped = adj.copy()
    looped[:, np.arange(4), np.arange(4)] = True
    for name in COUNT_COLUMNS:
        np.testing.assert_array_equal(cycle_counts_arrays(looped)[name], cycle_counts_arrays(adj)[name])
    with pytest.raises(LensError, match="shape"):
        cycle_counts_arrays(np.zeros((3, 4, 5), dtype=bool))


def test_vertex_and_pair_counts_match_enumeration():
    rng = np.random.default_rng(5)
    adj = random_graphs(rng, 60, 7)
    per_vertex = vertex_cycle_counts(adj)
    per_pair = pair_cycle_counts(adj)
    for t in range(len(adj)):
        a = adj[t]
        b = a & a.T
        for name, m in (("c3", a), ("c3_tie", b)):
            cycles = [c for c in itertools.permutations(range(7), 3)
                      if c[0] == min(c) and m[c[0], c[1]] and m[c[1], c[2]] and m[c[2], c[0]]]
            for v in range(7):
                assert per_vertex[name][t, v] == sum(v in c for c in cycles)
            for i, j in itertools.combinations(range(7), 2):
                k = sum(i in c and j in c for c in cycles)
                assert per_pair[name][t, i, j] == per_pair[name][t, j, i] == k
    assert np.all(per_vertex["c3_bad"] >= 0) and np.all(per_pair["c3_bad"] >= 0)


def verdict_frame(rows: list[tuple[str, str, str, str]], judge: str = "j1") -> pd.DataFrame:
    """(prompt_id, model_a, model_b, winner) rows as a canonical verdict frame."""
    df = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"])
    df["dataset"], df["judge"], df["variant"], df["turn"] = "d", judge, 0, 1
    df["category"], df["variant_kind"], df["prob_a"] = "c", "original", np.nan
    return df


def test_cycle_counts_frame_on_a_built_stack():
    rows = [
        ("p1", "a", "b", "A"), ("p1", "b", "c", "A"), ("p1", "c", "a", "A"),  # a>b>c>a
        ("p2", "a", "b", "tie"), ("p2", "b", "c", "tie"), ("p2", "a", "c", "tie"),  # all tie
        ("p3", "a", "b", "A"), ("p3", "b", "c", "A"), ("p3", "a", "c", "tie"),  # a>b>c, a~c
    ]
    stack = build_stack(verdict_frame(rows))
    df = cycle_counts(stack)
    assert list(df.columns) == list(COUNT_COLUMNS)
    assert all(df[c].dtype == np.int64 for c in COUNT_COLUMNS)
    assert list(df.index) == [0, 1, 2]
    assert df[["c3", "c3_tie", "c3_bad"]].values.tolist() == [[1, 0, 1], [2, 2, 0], [1, 0, 1]]
