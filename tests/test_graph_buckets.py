"""engine.graphs.buckets: graphs bucketed by their own number of models give the same per-graph
results as the dense (T, n, n) stack and as brute force, on random graphs of mixed sizes (two-model
battles, small and large tournaments, missing pairs, invalid verdicts, probabilities on some);
graphs of fewer than 3 models are left out of cycle statistics with a stated count; keep-K's
coverage score, hand-worked; and the CLI refusals and notes."""

from __future__ import annotations

import io
import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.diagnostics import diagnose
from engine.diagnostics.cycle_stats import cycle_table
from engine.diagnostics.entropy import nontransitive_vertices, structural_entropy
from engine.diagnostics.nontransitivity import model_win_rates, pnt_triples
from engine.diagnostics.sntd import sntd_arrays, sntd_triples
from engine.errors import LensError
from engine.graphs.buckets import as_buckets, build_buckets
from engine.graphs.cycles import (
    COUNT_COLUMNS,
    cycle_capacity,
    cycle_counts,
    cycle_counts_arrays,
    vertex_cycle_counts,
)
from engine.graphs.stack import build_stack
from engine.graphs.structure import bad_triad_participation, graph_table, largest_scc
from engine.graphs.triads import classify_triples, nontransitive_triads, triad_patterns
from engine.graphs.truncation import graph_scores, keep_k_graphs


def mixed_verdicts(seed: int, n_models: int = 9, graphs: int = 60) -> pd.DataFrame:
    """Random graphs of 2 … n_models models, some pairs missing, some verdicts invalid, repeated
    verdicts on a pair, probabilities on about half of the graphs."""
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(n_models)]
    rows = []
    for g in range(graphs):
        k = int(rng.choice([2, 2, 3, 4, 5, n_models]))
        pick = sorted(rng.choice(n_models, k, replace=False))
        soft = rng.random() < 0.5
        for i, j in itertools.combinations(pick, 2):
            if k > 2 and rng.random() < 0.2:
                continue  # a pair never compared
            for _ in range(int(rng.integers(1, 3))):
                w = rng.choice(["A", "B", "tie", "invalid"], p=[0.4, 0.35, 0.15, 0.1])
                a, b = (names[i], names[j]) if rng.random() < 0.5 else (names[j], names[i])
                rows.append(
                    {
                        "dataset": "d",
                        "judge": "j" if g % 3 else "k",
                        "prompt_id": str(g),
                        "variant": 0,
                        "turn": 1,
                        "category": "c",
                        "variant_kind": "original",
                        "model_a": a,
                        "model_b": b,
                        "winner": w,
                        "order": "AB",
                        "prob_a": rng.random() if soft else np.nan,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_buckets_hold_the_dense_stack(seed):
    v = mixed_verdicts(seed)
    stack, b = build_stack(v), build_buckets(v)
    assert b.T == stack.T and b.models == stack.models
    pd.testing.assert_frame_equal(b.keys, stack.keys)
    back = b.dense()
    assert np.array_equal(back.adj, stack.adj) and np.array_equal(back.observed, stack.observed)
    assert np.array_equal(back.soft, stack.soft, equal_nan=True)
    # bucketing a dense stack gives the same buckets as bucketing the verdicts
    again = as_buckets(stack)
    assert [bk.k for bk in again.buckets] == [bk.k for bk in b.buckets]
    for x, y in zip(again.buckets, b.buckets, strict=True):
        assert np.array_equal(x.graph, y.graph) and np.array_equal(x.members, y.members)
        assert np.array_equal(x.adj, y.adj) and np.array_equal(x.observed, y.observed)
    # each graph's bucket size is the number of models in its compared pairs
    assert np.array_equal(b.sizes, stack.observed.any(axis=2).sum(axis=1))
    assert b.n_below(3) == int((b.sizes < 3).sum()) > 0


def test_no_soft_array_without_probabilities():
    v = mixed_verdicts(3).assign(prob_a=np.nan)
    assert build_stack(v).soft is None
    assert all(bk.soft is None for bk in build_buckets(v).buckets) and not build_buckets(v).has_soft


def brute_cycles(a: np.ndarray, length: int) -> tuple[int, int]:
    """(all directed simple cycles of ``length``, those made of ties only) by enumeration."""
    tie = a & a.T
    total = ties = 0
    for subset in itertools.combinations(range(a.shape[0]), length):
        for order in itertools.permutations(subset[1:]):
            seq = (subset[0], *order)
            steps = [(seq[s], seq[(s + 1) % length]) for s in range(length)]
            if all(a[i, j] for i, j in steps):
                total += 1
                ties += all(tie[i, j] for i, j in steps)
    return total, ties


@pytest.mark.parametrize("seed", [0, 1])
def test_graph_table_equals_dense_kernels_and_brute_force(seed):
    v = mixed_verdicts(seed)
    stack, b = build_stack(v), build_buckets(v)
    table = graph_table(b)
    dense = cycle_counts_arrays(stack.adj)
    for c in COUNT_COLUMNS:
        assert np.array_equal(table[c].to_numpy(), dense[c]), c
    assert np.array_equal(table["largest_scc"].to_numpy(), largest_scc(stack.adj))
    pd.testing.assert_frame_equal(table, graph_table(stack))
    pd.testing.assert_frame_equal(cycle_counts(b), cycle_counts(stack))
    for t in range(0, stack.T, 7):
        a = stack.adj[t] & ~np.eye(stack.n, dtype=bool)
        c3, c3t = brute_cycles(a, 3)
        c4, c4t = brute_cycles(a, 4)
        assert (table["c3"][t], table["c3_tie"][t], table["c4"][t], table["c4_tie"][t]) == (c3, c3t, c4, c4t)
        g = nx.Graph(list(zip(*np.nonzero(np.triu(stack.observed[t])), strict=True)))
        assert table["n_models"][t] == g.number_of_nodes() and table["n_pairs"][t] == g.number_of_edges()


def dense_classify(stack) -> pd.DataFrame:
    """The dense computation: every triple of the n models in every graph (the pre-bucket code)."""
    pat, tri = triad_patterns(stack.adj, stack.observed)
    g, m = np.nonzero(pat >= 0)
    names = np.asarray(stack.models)
    return pd.DataFrame({"graph": g, "model_a": names[tri[m, 0]], "model_b": names[tri[m, 1]],
                         "model_c": names[tri[m, 2]], "pattern": pat[g, m].astype(np.int64)})


@pytest.mark.parametrize("seed", [0, 4])
def test_triads_equal_dense(seed):
    v = mixed_verdicts(seed)
    stack, b = build_stack(v), build_buckets(v)
    got = classify_triples(b)
    want = dense_classify(stack)
    assert len(got) == len(want) > 0
    for c in ("graph", "model_a", "model_b", "model_c"):
        assert got[c].astype(str).tolist() == want[c].astype(str).tolist()
    assert got["pattern"].astype(np.int64).tolist() == want["pattern"].tolist()
    pd.testing.assert_frame_equal(classify_triples(stack), got)
    nt = nontransitive_triads(b)
    assert len(nt) == int((~got["transitive"]).sum())
    assert nt.groupby("graph").size().reindex(range(b.T), fill_value=0).tolist() == \
        graph_table(b)["c3_bad"].tolist()  # one bad 3-cycle per non-transitive triple
    pnt = pnt_triples(b)
    assert (
        pnt["graph"].tolist() == got["graph"].tolist()
        and (pnt["judge"] == stack.keys["judge"][pnt["graph"]].to_numpy()).all()
    )


def test_participation_entropy_sntd_win_rates_equal_dense():
    v = mixed_verdicts(5)
    stack, b = build_stack(v), build_buckets(v)
    per_model, per_pair = bad_triad_participation(b)
    vb = vertex_cycle_counts(stack.adj)["c3_bad"]
    assert per_model["bad_triads"].tolist() == vb.sum(axis=0).tolist()
    seen = stack.observed.any(axis=2)
    big = seen.sum(axis=1) >= 3  # graphs of < 3 models hold no triad and are left out
    assert per_model["graphs"].tolist() == (seen & big[:, None]).sum(axis=0).tolist()
    assert per_model["graphs_with_bad"].tolist() == (vb > 0).sum(axis=0).tolist()
    assert per_pair["graphs"].sum() == stack.observed[big].sum() // 2
    from engine.diagnostics.entropy import entropy_table

    et = entropy_table(b)
    present = stack.observed.any(axis=2)
    assert et["n_vertices"].tolist() == present.sum(axis=1).tolist()
    assert (
        et["nontransitive_vertices"].tolist()
        == (nontransitive_vertices(stack.adj) & present).sum(axis=1).tolist()
    )
    assert np.allclose(et["h2"], structural_entropy(stack.adj))
    val, tri = sntd_arrays(stack.soft)
    t_idx, k_idx = np.nonzero(~np.isnan(val))
    st = sntd_triples(b)
    assert st["graph"].tolist() == t_idx.tolist()
    assert np.allclose(st["sntd"], val[t_idx, k_idx])
    wins = (stack.adj & ~stack.adj.swapaxes(1, 2)).sum(axis=(0, 2))
    ties = (stack.adj & stack.adj.swapaxes(1, 2)).sum(axis=(0, 2))
    assert np.allclose(model_win_rates(b), (wins + ties / 2) / stack.observed.sum(axis=(0, 2)))


def test_cycle_table_leaves_small_graphs_out():
    v = mixed_verdicts(6)
    b = build_buckets(v)
    table, part = cycle_table(b)
    sizes = b.sizes
    assert table["graph"].tolist() == np.flatnonzero(sizes >= 3).tolist()
    assert table.attrs["left_out"] == int((sizes < 3).sum()) > 0
    dense = graph_table(b)
    bad3 = dense["c3_bad"].to_numpy()[table["graph"].to_numpy()]
    assert table["len_3"].astype(np.int64).tolist() == bad3.tolist()
    assert part["cycles"].sum() == sum(
        int(table[c].sum()) * int(c[4:]) for c in table.columns if c.startswith("len_")
    )


def test_capacity_by_brute_force_and_as_a_bound():
    v = mixed_verdicts(7)
    stack = build_stack(v)
    cap = cycle_capacity(build_buckets(v))
    counts = cycle_counts(stack)
    for t in range(stack.T):
        o = stack.observed[t]
        tri = sum(o[i, j] and o[j, k] and o[i, k] for i, j, k in itertools.combinations(range(stack.n), 3))
        sq = 0  # undirected 4-cycles: each 4-set has 3 ways to close a cycle
        for q in itertools.combinations(range(stack.n), 4):
            for a, b_, c, d in ((q[0], q[1], q[2], q[3]), (q[0], q[1], q[3], q[2]), (q[0], q[2], q[1], q[3])):
                sq += bool(o[a, b_] and o[b_, c] and o[c, d] and o[d, a])
        assert (cap["cap3"][t], cap["cap4"][t]) == (tri, sq)
    assert (counts["c3_bad"] <= cap["cap3"]).all() and (counts["c4_bad"] <= cap["cap4"]).all()


def test_coverage_score_hand_worked():
    # graph 0: complete on 4 models (4 triples, 3 four-cycles); graph 1: one pair missing (2, 1)
    counts = pd.DataFrame({"c3_bad": [2, 1], "c4_bad": [1, 1]})
    capacity = pd.DataFrame({"cap3": [4, 2], "cap4": [3, 1]})
    raw, cov = graph_scores(counts, capacity, mu=1.0, score="raw")
    assert raw.tolist() == [3.0, 2.0]
    s, cov = graph_scores(counts, capacity, mu=1.0)
    assert s.tolist() == [3.0, 1 * 4 / 2 + 1 * 3 / 1]  # 5.0: the incomplete graph is the worse one
    assert cov.tolist() == [1.0, 3 / 7]
    s2, _ = graph_scores(counts, capacity, mu=0.5, lam3=2.0)
    assert s2.tolist() == [2 * 2 + 0.5 * 1, 2 * 1 * 2 + 0.5 * 1 * 3]
    # every graph with the same pairs: the coverage score is S_mu itself
    same = pd.DataFrame({"cap3": [4, 4], "cap4": [3, 3]})
    assert graph_scores(counts, same)[0].tolist() == graph_scores(counts, same, score="raw")[0].tolist()


def _rows(prompt, pairs, judge="j"):
    return [
        {
            "dataset": "d",
            "judge": judge,
            "prompt_id": prompt,
            "variant": 0,
            "turn": 1,
            "category": "c",
            "variant_kind": "original",
            "model_a": a,
            "model_b": b,
            "winner": w,
            "order": "AB",
            "prob_a": np.nan,
        }
        for a, b, w in pairs
    ]


def test_keep_k_leaves_out_graphs_that_cannot_hold_a_cycle():
    full = [
        ("a", "b", "A"),
        ("b", "c", "A"),
        ("c", "a", "A"),
        ("a", "d", "A"),
        ("b", "d", "A"),
        ("c", "d", "A"),
    ]
    mostly_invalid = [("a", "b", "A"), ("b", "c", "invalid"), ("c", "a", "invalid"), ("a", "d", "invalid"),
                      ("b", "d", "invalid"), ("c", "d", "invalid")]
    transitive = [
        ("a", "b", "A"),
        ("b", "c", "A"),
        ("a", "c", "A"),
        ("a", "d", "A"),
        ("b", "d", "A"),
        ("c", "d", "A"),
    ]
    v = pd.DataFrame(
        _rows("1", full) + _rows("2", mostly_invalid) + _rows("3", transitive) + _rows("4", [("a", "b", "B")])
    )
    b = build_buckets(v)
    kept = keep_k_graphs(b, 1)
    assert kept.table["prompt_id"].tolist() == ["3"]  # not the graph with 5 of 6 verdicts invalid
    assert (
        kept.n_no_cycle == 2
        and kept.n_pool == 2
        and "2 graphs of the perturbed pool cannot hold a cycle" in kept.note
    )
    assert kept.table["coverage"].tolist() == [1.0]
    all_kept = keep_k_graphs(build_stack(v), 5)
    assert all_kept.table["prompt_id"].tolist() == ["3", "1"] and all_kept.table["raw_score"].tolist() == [
        0.0,
        1.0,
    ]
    with pytest.raises(LensError, match="can hold a cycle"):
        keep_k_graphs(
            build_buckets(pd.DataFrame(_rows("2", mostly_invalid) + _rows("4", [("a", "b", "B")]))), 1
        )


def arena_csv(path, battles=40):
    rng = np.random.default_rng(0)
    models = [f"m{i}" for i in range(6)]
    rows = []
    for i in range(battles):
        a, b = rng.choice(6, 2, replace=False)
        rows.append((f"p{i}", models[a], models[b], rng.choice(["A", "B", "tie"])))
    pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"]).to_csv(path, index=False)


def run(db, capsys, *args):
    capsys.readouterr()
    rc = main(["--db", str(db), *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_on_battles_refuses_keep_k_and_says_why(tmp_path, shipped_db_copy, capsys):
    db_path = shipped_db_copy  # no first-use import of the shipped datasets
    path = tmp_path / "arena.csv"
    arena_csv(path)
    assert run(db_path, capsys, "import", str(path), "--dataset", "arena")[0] == 0
    rc, out, err = run(db_path, capsys, "leaderboard", "--dataset", "arena", "--keep-k", "5")
    assert rc == 2 and "No graph of the perturbed pool can hold a cycle (40 graphs" in err and out == ""
    for table in ("pnt", "patterns"):
        for _ in range(2):  # computed, then from the result cache: the note comes with both
            rc, out, err = run(
                db_path, capsys, "diagnose", "--dataset", "arena", "--table", table, "--format", "csv"
            )
            assert rc == 0 and "No graph has 3 or more models (largest: 2)" in err, err
            assert "40 of 40 graphs have fewer than 3 models" in err
    rc, out, err = run(
        db_path, capsys, "diagnose", "--dataset", "arena", "--table", "cycles", "--format", "csv"
    )
    assert (
        rc == 0
        and "40 of 40 graphs have fewer than 3 models" in err
        and len(pd.read_csv(io.StringIO(out))) == 0
    )
    rc, out, err = run(db_path, capsys, "graphs", "--dataset", "arena", "--mu", "1", "--format", "csv")
    table = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(table) == 40 and table["coverage"].isna().all() and table["s_mu"].isna().all()
    assert "40 of 40 graphs cannot hold a cycle" in err


def test_diagnose_mixed_sizes_counts_left_out_graphs():
    v = mixed_verdicts(8)
    b = build_buckets(v)
    small = b.n_below(3)
    rates = diagnose(v, table="cycles")
    assert rates["graphs"].sum() == b.T - small
    assert rates.attrs["notes"][0].startswith(f"{small} of {b.T} graphs have fewer than 3 models")


def test_keep_k_prefers_the_better_covered_graph_at_equal_raw_counts():
    # both graphs hold the cycle a>b>c>a and nothing else bad; graph 2 lost b-d to an invalid verdict,
    # so it could carry 2 bad triads instead of 4: its rate is twice graph 1's (score 1·4/2 = 2)
    full = [
        ("a", "b", "A"),
        ("b", "c", "A"),
        ("c", "a", "A"),
        ("a", "d", "A"),
        ("b", "d", "A"),
        ("c", "d", "A"),
    ]
    part = [
        ("a", "b", "A"),
        ("b", "c", "A"),
        ("c", "a", "A"),
        ("a", "d", "A"),
        ("b", "d", "invalid"),
        ("c", "d", "A"),
    ]
    v = pd.DataFrame(_rows("2", part) + _rows("1", full))
    kept = keep_k_graphs(build_buckets(v), 2)
    assert kept.table["prompt_id"].tolist() == ["1", "2"]
    assert kept.table["raw_score"].tolist() == [1.0, 1.0] and kept.table["score"].tolist() == [1.0, 2.0]
    assert kept.table["coverage"].tolist() == [1.0, 3 / 7]
    assert "coverage 0.429 to 1" in kept.note
    raw = keep_k_graphs(build_buckets(v), 1, score="raw")
    assert raw.table["prompt_id"].tolist() == ["1"] and "coverage" not in raw.note  # equal raw: key order
    # graph 1 with a second bad triad (a>b>d>a) and a bad 4-cycle: raw 3; graph 2 keeps one triangle of
    # pairs (cap3 = 1, cap4 = 0) and its one bad triad: raw 1, scaled 1·4/1 = 4
    full2 = [
        ("a", "b", "A"),
        ("b", "c", "A"),
        ("c", "a", "A"),
        ("d", "a", "A"),
        ("b", "d", "A"),
        ("c", "d", "A"),
    ]
    thin = [("a", "b", "A"), ("b", "c", "A"), ("c", "a", "A"), ("a", "d", "A"), ("b", "d", "invalid"),
            ("c", "d", "invalid")]
    v2 = build_buckets(pd.DataFrame(_rows("2", thin) + _rows("1", full2)))
    assert keep_k_graphs(v2, 1).table[["prompt_id", "raw_score", "score"]].values.tolist() == [
        ["1", 3.0, 3.0]
    ]
    assert keep_k_graphs(v2, 1, score="raw").table[["prompt_id", "score"]].values.tolist() == [["2", 1.0]]
