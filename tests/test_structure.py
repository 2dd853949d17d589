"""engine.graphs.structure and the `graphs` command: draw rate, SCCs, participation, the graph table."""

from __future__ import annotations

import io
import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.graphs.cycles import COUNT_COLUMNS, cycle_counts
from engine.graphs.stack import KEY_COLUMNS, GraphStack, build_stack
from engine.graphs.structure import (
    bad_triad_participation,
    draw_rate,
    graph_table,
    largest_scc,
    scc_membership,
)
from engine.store.connection import Store


def random_stack(seed: int, T: int, n: int, sparse: bool = False) -> GraphStack:
    """Random graphs with ties and missing pairs (rates varying per graph; optionally mostly missing)."""
    rng = np.random.default_rng(seed)
    alpha = np.array([8.0, 1.0, 1.0, 0.3]) if sparse else np.ones(4)
    probs = rng.dirichlet(alpha, size=T)
    outcome = (rng.random((T, n, n))[..., None] > probs.cumsum(axis=1)[:, None, None, :]).sum(axis=-1)
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    keys = pd.DataFrame({c: [f"{c}{t}" for t in range(T)] for c in KEY_COLUMNS})
    keys["n_verdicts"], keys["n_invalid"] = 1, 0
    return GraphStack(tuple(f"m{i:02d}" for i in range(n)), adj, adj | adj.swapaxes(1, 2), keys)


def test_draw_rate_counts_tied_pairs_among_compared_pairs():
    stack = random_stack(1, 200, 7)
    got = draw_rate(stack)
    for t in range(stack.T):
        a = stack.adj[t]
        pairs = [(i, j) for i, j in itertools.combinations(range(7), 2) if a[i, j] or a[j, i]]
        ties = [(i, j) for i, j in pairs if a[i, j] and a[j, i]]
        if pairs:
            assert got[t] == pytest.approx(len(ties) / len(pairs), abs=0, rel=1e-15)
        else:
            assert np.isnan(got[t])


@pytest.mark.parametrize("n,sparse", [(1, False), (2, False), (5, True), (9, True), (12, False), (40, True)])
def test_largest_scc_and_membership_match_networkx(n, sparse):
    stack = random_stack(30 + n, 80, n, sparse=sparse)
    got = largest_scc(stack)
    member = scc_membership(stack.adj)
    for t in range(stack.T):
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(*np.nonzero(stack.adj[t]), strict=True))
        comps = list(nx.strongly_connected_components(g))
        assert got[t] == max(len(c) for c in comps)
        expect = np.zeros((n, n), dtype=bool)
        for c in comps:
            idx = np.array(sorted(c))
            expect[np.ix_(idx, idx)] = True
        np.testing.assert_array_equal(member[t], expect)


def test_largest_scc_on_long_paths_needs_every_squaring():
    """A directed n-cycle is one SCC only through its longest paths (n − 1 edges); a path is none."""
    for n in (2, 3, 17, 64, 65, 100):
        ring = np.zeros((2, n, n), dtype=bool)
        idx = np.arange(n)
        ring[0, idx, (idx + 1) % n] = True  # the cycle 0 → 1 → … → n−1 → 0
        ring[1, idx[:-1], idx[1:]] = True  # the path without the closing edge
        sizes = scc_membership(ring).sum(axis=2).max(axis=1)
        assert sizes.tolist() == [n, 1]


def brute_participation(stack: GraphStack):
    """Bad triads per model / pair by enumerating triples: non-transitive = weak preference not transitive."""
    n = stack.n
    per_model = np.zeros(n, dtype=int)
    graphs_with = np.zeros(n, dtype=int)
    per_pair = np.zeros((n, n), dtype=int)
    pair_graphs_with = np.zeros((n, n), dtype=int)
    for t in range(stack.T):
        a = stack.adj[t]
        in_bad = np.zeros(n, dtype=bool)
        pair_bad = np.zeros((n, n), dtype=bool)
        for tri in itertools.combinations(range(n), 3):
            if not all(a[p, q] or a[q, p] for p, q in itertools.combinations(tri, 2)):
                continue
            if all(not (a[x, y] and a[y, z]) or a[x, z] for x, y, z in itertools.permutations(tri)):
                continue
            for v in tri:
                per_model[v] += 1
                in_bad[v] = True
            for p, q in itertools.combinations(tri, 2):
                per_pair[p, q] += 1
                pair_bad[p, q] = True
        graphs_with += in_bad
        pair_graphs_with += pair_bad
    return per_model, graphs_with, per_pair, pair_graphs_with


def test_bad_triad_participation_matches_enumeration():
    stack = random_stack(4, 120, 7)
    per_model, per_pair = bad_triad_participation(stack)
    bm, bg, bp, bpg = brute_participation(stack)
    assert per_model["model"].tolist() == list(stack.models)
    np.testing.assert_array_equal(per_model["bad_triads"], bm)
    np.testing.assert_array_equal(per_model["graphs_with_bad"], bg)
    seen = (stack.adj | stack.adj.swapaxes(1, 2)).any(axis=2)
    present = (seen & (seen.sum(axis=1) >= 3)[:, None]).sum(axis=0)  # graphs of < 3 models hold no triad
    np.testing.assert_array_equal(per_model["graphs"], present)
    np.testing.assert_allclose(per_model["participation_rate"], bg / present, rtol=1e-15)
    iu, ju = np.triu_indices(7, 1)
    assert list(zip(per_pair["model_a"], per_pair["model_b"], strict=True)) == [
        (stack.models[i], stack.models[j]) for i, j in zip(iu, ju, strict=True)
    ]
    np.testing.assert_array_equal(per_pair["bad_triads"], bp[iu, ju])
    np.testing.assert_array_equal(per_pair["graphs_with_bad"], bpg[iu, ju])
    # every bad triad has 3 models and 3 pairs
    assert (
        per_model["bad_triads"].sum()
        == per_pair["bad_triads"].sum()
        == 3 * int(cycle_counts(stack)["c3_bad"].sum())
    )


def test_graph_table_columns_and_values():
    stack = random_stack(8, 50, 6, sparse=True)
    table = graph_table(stack)
    assert len(table) == stack.T
    for c in (*KEY_COLUMNS, "n_models", "n_pairs", *COUNT_COLUMNS, "draw_rate", "largest_scc"):
        assert c in table.columns
    pd.testing.assert_frame_equal(table[list(COUNT_COLUMNS)], cycle_counts(stack))
    present = stack.adj | stack.adj.swapaxes(1, 2)
    np.testing.assert_array_equal(table["n_models"], present.any(axis=2).sum(axis=1))
    np.testing.assert_array_equal(table["n_pairs"], present.sum(axis=(1, 2)) // 2)
    np.testing.assert_array_equal(table["largest_scc"], largest_scc(stack))


def insert_verdicts(store: Store, dataset: str, rows: list[tuple]) -> None:
    """(judge, prompt_id, category, model_a, model_b, winner) rows straight into the verdicts table."""
    with store.transaction() as con:
        con.execute("INSERT INTO datasets (name) VALUES (?)", [dataset])
        for line, (judge, prompt, category, a, b, w) in enumerate(rows, start=2):
            con.execute(
                "INSERT INTO verdicts (dataset, judge, prompt_id, category, model_a, model_b, winner,"
                " source_file, source_line) VALUES (?, ?, ?, ?, ?, ?, ?, 'toy.csv', ?)",
                [dataset, judge, prompt, category, a, b, w, line],
            )


ROWS = [
    # p1, judge j1: x>y>z>x plus w tied with everyone -> one SCC of 4
    *[
        ("j1", "p1", "math", a, b, w)
        for a, b, w in [
            ("x", "y", "A"),
            ("y", "z", "A"),
            ("z", "x", "A"),
            ("w", "x", "tie"),
            ("w", "y", "tie"),
            ("w", "z", "tie"),
        ]
    ],
    # p2, judge j1: w>x>y>z, w>y but z>w (cycles w>y>z>w and w>x>y>z>w), x-z invalid so missing
    *[
        ("j1", "p2", "writing", a, b, w)
        for a, b, w in [
            ("w", "x", "A"),
            ("x", "y", "A"),
            ("y", "z", "A"),
            ("w", "y", "A"),
            ("w", "z", "B"),
            ("x", "z", "invalid"),
        ]
    ],
    # p1, judge j2: all ties among three models
    *[("j2", "p1", "math", a, b, "tie") for a, b in [("x", "y"), ("y", "z"), ("x", "z")]],
]


ROWS_FRAME = pd.DataFrame(ROWS, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner"])


def test_graphs_command_csv(db_path, capsys):
    store = Store(db_path)
    insert_verdicts(store, "toy", ROWS)
    store.close()
    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    df = pd.read_csv(io.StringIO(out))
    assert out.splitlines()[0] == (
        "judge,prompt_id,variant,turn,category,n_models,c3,c4,c3_tie,c4_tie,c3_bad,c4_bad,draw_rate,largest_scc,"
        "variant_kind,n_pairs,n_verdicts,n_invalid,coverage,policy"
    )
    assert set(df["policy"]) == {"plurality"}
    caps = []  # coverage: (triangles + 4-cycles of compared pairs) over the best graph's, by networkx
    for row in df.itertuples(index=False):
        sub = ROWS_FRAME[(ROWS_FRAME.judge == row.judge) & (ROWS_FRAME.prompt_id == row.prompt_id)]
        und = nx.Graph(sub.loc[sub.winner != "invalid", ["model_a", "model_b"]].itertuples(index=False))
        caps.append(len(list(nx.simple_cycles(und, length_bound=4))))
    assert df["coverage"].tolist() == pytest.approx([c / max(caps) for c in caps])
    assert df[["judge", "prompt_id"]].values.tolist() == [["j1", "p1"], ["j1", "p2"], ["j2", "p1"]]
    # every count against networkx on the graph drawn from the same rows
    verdicts = pd.DataFrame(ROWS, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner"])
    for row in df.itertuples(index=False):
        sub = verdicts[(verdicts.judge == row.judge) & (verdicts.prompt_id == row.prompt_id)]
        sub = sub[sub.winner != "invalid"]
        g = nx.DiGraph()
        for a, b, w in sub[["model_a", "model_b", "winner"]].itertuples(index=False):
            if w in ("A", "tie"):
                g.add_edge(a, b)
            if w in ("B", "tie"):
                g.add_edge(b, a)
        lengths = [len(c) for c in nx.simple_cycles(g, length_bound=4)]
        assert row.c3 == lengths.count(3) and row.c4 == lengths.count(4)
        assert row.largest_scc == max(len(c) for c in nx.strongly_connected_components(g))
        assert row.draw_rate == pytest.approx((sub.winner == "tie").mean())
        assert row.n_models == g.number_of_nodes() and row.n_pairs == len(sub)
    assert (
        df.loc[1, "n_invalid"] == 1 and df.loc[1, "c3"] == df.loc[1, "c4"] == 1 and df.loc[2, "c3_bad"] == 0
    )
    assert df.loc[2, "c3"] == 2 and df.loc[0, "largest_scc"] == 4

    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--judge", "j1", "--category", "math",
                 "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert df[["judge", "prompt_id"]].values.tolist() == [["j1", "p1"]]

    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--mu", "0.5", "--score", "raw",
                 "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert df.columns[-1] == "s_mu"
    np.testing.assert_array_equal(df["s_mu"], df["c3_bad"] + 0.5 * df["c4_bad"])
    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--mu", "-1", "--score", "raw",
                 "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))  # any finite weight (engine/graphs/truncation.py)
    np.testing.assert_array_equal(df["s_mu"], df["c3_bad"] - df["c4_bad"])
    # the default scales by coverage: p1 (complete on 4: 4 triples, 3 four-cycles) is the reference;
    # p2 misses x-z (2 triples, 1 four-cycle): 1 bad 3-cycle · 4/2 + 0.5 · 1 bad 4-cycle · 3/1
    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--mu", "0.5", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    c3, c4 = df["c3_bad"].tolist(), df["c4_bad"].tolist()
    assert c3[1] == 1 and c4[1] == 1  # w>y>z>w and w>x>y>z>w
    assert df["s_mu"].tolist() == [c3[0] + 0.5 * c4[0], 1 * 4 / 2 + 0.5 * 1 * 3 / 1, 0.0]
    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--mu", "inf", "--format", "csv"]) == 2
    assert capsys.readouterr().err.startswith("error: ")

    assert main(["--db", str(db_path), "graphs", "--dataset", "toy", "--judge", "j9", "--format", "csv"]) == 2
    err = capsys.readouterr()
    assert (
        err.out == ""
        and err.err == "error: Dataset 'toy' has no judge 'j9' (--judge); its judges are j1, j2.\n"
    )


def test_graph_table_on_a_built_stack_keeps_key_order():
    rows = pd.DataFrame(ROWS, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner"])
    rows["dataset"], rows["variant"], rows["turn"], rows["variant_kind"], rows["prob_a"] = (
        "d",
        0,
        1,
        "original",
        np.nan,
    )
    stack = build_stack(rows)
    table = graph_table(stack)
    pd.testing.assert_frame_equal(table[list(KEY_COLUMNS)], stack.keys[list(KEY_COLUMNS)])


def test_graphs_command_on_the_shipped_data(shipped_db, capsys):
    """Every graph of the shipped dataset: counts against networkx cycles on A and on B."""
    from engine.graphs.triads import classify_triples
    from engine.store.schema import DEFAULT_DATASET

    assert main(["--db", str(shipped_db), "graphs", "--dataset", DEFAULT_DATASET, "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out), dtype={"prompt_id": str})
    store = Store(shipped_db)
    stack = build_stack(store.verdicts(DEFAULT_DATASET))
    store.close()
    assert len(df) == stack.T > 0
    assert df[["judge", "prompt_id"]].values.tolist() == stack.keys[["judge", "prompt_id"]].values.tolist()
    for t in range(stack.T):
        row = df.iloc[t]
        for prefix, m in (("", stack.adj[t]), ("_tie", stack.ties[t])):
            g = nx.DiGraph()
            g.add_edges_from(zip(*np.nonzero(m), strict=True))
            lengths = [len(c) for c in nx.simple_cycles(g, length_bound=4)]
            assert (row[f"c3{prefix}"], row[f"c4{prefix}"]) == (lengths.count(3), lengths.count(4))
    triads = classify_triples(stack)
    bad = np.bincount(triads.loc[~triads["transitive"], "graph"], minlength=stack.T)
    np.testing.assert_array_equal(df["c3_bad"], bad)
    assert df["c3_bad"].sum() > 0 and df["c4_bad"].sum() > 0
