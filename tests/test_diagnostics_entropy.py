"""ELSPR ρ_non-trans and structural entropy (paper 004, eq. 2-5) against a networkx slow twin."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.diagnostics.entropy import (
    entropy_summary,
    entropy_table,
    nontransitive_vertices,
    structural_entropy,
)
from engine.graphs.stack import GraphStack
from engine.graphs.structure import scc_membership


def random_graphs(rng: np.random.Generator, T: int, n: int) -> np.ndarray:
    """Each pair missing, i>j, j>i or tied, with rates that vary per graph."""
    probs = rng.dirichlet(np.ones(4), size=T)
    cum = probs.cumsum(axis=1)
    outcome = (rng.random((T, n, n))[..., None] > cum[:, None, None, :]).sum(axis=-1)
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    return adj


def elspr_graph(a: np.ndarray) -> nx.DiGraph:
    """ELSPR's convention: an edge from the loser to the winner (our i → j becomes j → i)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(a.shape[0]))
    g.add_edges_from((int(j), int(i)) for i, j in zip(*np.nonzero(a), strict=False))
    return g


def slow_h2(a: np.ndarray) -> float:
    """Eq. 4 written out on ELSPR's own convention, with networkx SCCs."""
    g = elspr_graph(a)
    comps = [set(c) for c in nx.strongly_connected_components(g)]
    comp_of = {v: k for k, c in enumerate(comps) for v in c}
    din = dict(g.in_degree())
    vg = sum(din.values())
    if vg == 0:
        return 0.0
    h = 0.0
    for _k, comp in enumerate(comps):
        vs = sum(din[v] for v in comp)
        g_k = sum(1 for u, v in g.edges() if v in comp and u not in comp
                  and not (len(comp) == 1 and len(comps[comp_of[u]]) == 1))
        if g_k:
            h -= g_k / vg * math.log2(vs / vg)
        for v in comp:
            if din[v]:
                h -= din[v] / vg * math.log2(din[v] / vs)
    return h


def slow_nontransitive(a: np.ndarray) -> set[int]:
    g = elspr_graph(a)
    out: set[int] = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 2 and any(not (a[u, v] and a[v, u]) for u in comp for v in comp if u != v):
            out |= comp
    return out


def stack_of(adj: np.ndarray) -> GraphStack:
    T, n = adj.shape[0], adj.shape[1]
    observed = adj | adj.swapaxes(1, 2)
    keys = pd.DataFrame(
        {
            "dataset": "d",
            "judge": "j",
            "prompt_id": [str(t) for t in range(T)],
            "variant": 0,
            "turn": 1,
            "category": "c",
            "variant_kind": "original",
            "n_verdicts": 1,
            "n_invalid": 0,
        }
    )
    return GraphStack(tuple(f"m{i}" for i in range(n)), adj, observed, keys)


def test_linear_order_is_transitive_and_ordered():
    lin = np.triu(np.ones((6, 6), dtype=bool), 1)[None]
    t = entropy_table(stack_of(lin))
    assert t["nontransitive_vertices"].iloc[0] == 0
    assert t["h2"].iloc[0] == 0.0 and t["tau"].iloc[0] == 0.0


def test_three_cycle_and_all_tie_triangle():
    cyc = np.zeros((1, 3, 3), dtype=bool)
    cyc[0, 0, 1] = cyc[0, 1, 2] = cyc[0, 2, 0] = True
    tie = ~np.eye(3, dtype=bool)[None]
    both = np.concatenate([cyc, tie])
    nt = nontransitive_vertices(both)
    assert nt[0].all() and not nt[1].any()  # the all-tie triangle is a consistent SCC
    # one SCC of 3 with d_in = 1 each (cycle) or 2 each (ties): H² = log2 3, τ = 1
    assert structural_entropy(both) == pytest.approx([math.log2(3), math.log2(3)])
    s = entropy_summary(stack_of(both), by=("judge",))
    assert s["rho_nontrans"].iloc[0] == pytest.approx(3 / 6)
    assert s["tau_avg"].iloc[0] == pytest.approx(1.0)


def test_tie_contradiction_triangle_is_nontransitive():
    a = np.zeros((1, 3, 3), dtype=bool)
    a[0, 0, 1] = a[0, 1, 0] = True  # 0 ~ 1
    a[0, 1, 2] = a[0, 2, 1] = True  # 1 ~ 2
    a[0, 0, 2] = True  # 0 > 2
    assert nontransitive_vertices(a)[0].all()


@pytest.mark.parametrize("n", [3, 5, 8])
def test_against_networkx_slow_twin(n):
    rng = np.random.default_rng(n)
    adj = random_graphs(rng, 150, n)
    mutual = scc_membership(adj)
    nt = nontransitive_vertices(adj)
    h2 = structural_entropy(adj)
    for t in range(adj.shape[0]):
        g = elspr_graph(adj[t])
        same = np.zeros((n, n), dtype=bool)
        for comp in nx.strongly_connected_components(g):
            idx = list(comp)
            same[np.ix_(idx, idx)] = True
        assert np.array_equal(mutual[t], same)
        assert set(np.nonzero(nt[t])[0].tolist()) == slow_nontransitive(adj[t])
        assert h2[t] == pytest.approx(slow_h2(adj[t]), abs=1e-12)


def test_vertices_are_the_compared_models():
    # a 3-cycle inside a 5-model stack: the two never-compared models are not vertices
    a = np.zeros((1, 5, 5), dtype=bool)
    a[0, 0, 1] = a[0, 1, 2] = a[0, 2, 0] = True
    t = entropy_table(stack_of(a))
    assert t["n_vertices"].iloc[0] == 3 and t["tau"].iloc[0] == pytest.approx(1.0)
