"""Order-permutation stress test (paper 003, A.1.1) against a per-ordering networkx brute force."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd

from engine.diagnostics.order_stress import orderings, stress_summary, stress_test

BASE = {
    "dataset": "d",
    "variant": 0,
    "turn": 1,
    "category": "c",
    "variant_kind": "original",
    "prob_a": np.nan,
}
MODELS = ("a", "b", "c", "d")


def frame(rows) -> pd.DataFrame:
    v = pd.DataFrame(rows, columns=["judge", "prompt_id", "model_a", "model_b", "winner", "order"])
    for c, val in BASE.items():
        v[c] = val
    return v


def random_rows(rng, judge="j", prompts=12):
    rows = []
    for p in range(prompts):
        for x, y in itertools.combinations(MODELS, 2):
            for first, second in ((x, y), (y, x)):
                rows.append(
                    (judge, str(p), first, second, rng.choice(["A", "B", "tie"], p=[0.5, 0.35, 0.15]), "AB")
                )
    return rows


def brute(rows, prompt):
    """For each ordering: build the single-order graph with networkx and test it for cycles."""
    verdict = {(r[2], r[3]): r[4] for r in rows if r[1] == prompt}  # (first, second) → winner
    bad = strict = 0
    for perm in itertools.permutations(MODELS):
        g, w = nx.DiGraph(), nx.DiGraph()
        g.add_nodes_from(MODELS)
        w.add_nodes_from(MODELS)
        for i, j in itertools.combinations(range(4), 2):
            first, second = perm[i], perm[j]
            res = verdict[(first, second)]
            if res in ("A", "tie"):
                g.add_edge(first, second)
            if res in ("B", "tie"):
                g.add_edge(second, first)
            if res == "A":
                w.add_edge(first, second)
            if res == "B":
                w.add_edge(second, first)
        bad += any(nx.has_path(g, y, x) for x, y in w.edges())
        strict += not nx.is_directed_acyclic_graph(w)
    return bad, strict


def test_exhaustive_against_brute_force():
    rng = np.random.default_rng(0)
    rows = random_rows(rng)
    table = stress_test(frame(rows)).set_index("prompt_id")
    assert (table["orderings"] == 24).all() and table["exhaustive"].all()
    for p in table.index:
        assert (table.loc[p, "cyclic_bad"], table.loc[p, "cyclic_strict"]) == brute(rows, p)


def test_order_encoding_does_not_matter():
    rows = random_rows(np.random.default_rng(1))
    flipped = [(j, p, b, a, {"A": "B", "B": "A", "tie": "tie"}[w], "BA") for j, p, a, b, w, _ in rows]
    cols = ["cyclic_bad", "cyclic_strict"]
    assert stress_test(frame(rows))[cols].equals(stress_test(frame(flipped))[cols])


def test_first_position_judge_never_cycles():
    rows = [("first", str(p), x, y, "A", "AB") for p in range(3)
            for a, b in itertools.combinations(MODELS, 2) for x, y in ((a, b), (b, a))]
    s = stress_summary(stress_test(frame(rows)))
    assert s["cyclic_bad"].iloc[0] == 0 and s["ordering_graphs"].iloc[0] == 3 * 24


def test_sampled_orderings_are_permutations_and_seeded():
    pos, exhaustive = orderings(9, 500, seed=3)
    assert not exhaustive and pos.shape == (500, 9)
    assert (np.sort(pos, axis=1) == np.arange(9)).all()
    assert np.array_equal(pos, orderings(9, 500, seed=3)[0])
    pos_all, ex = orderings(4, 5040, seed=0)
    assert ex and len({tuple(r) for r in pos_all.tolist()}) == 24
