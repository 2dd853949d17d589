"""engine.graphs.triads and the `triads` command: triple patterns against a direct transitivity check."""

from __future__ import annotations

import io
import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.graphs.cycles import cycle_counts_arrays
from engine.graphs.stack import KEY_COLUMNS, GraphStack, build_stack
from engine.graphs.triads import KINDS, PATTERNS, classify_triples, cyclic_triads, nontransitive_triads
from engine.store.connection import Store

SYM = {">": 0, "~": 1, "<": 2}


def random_stack(seed: int, T: int, n: int) -> GraphStack:
    """Random graphs with ties and missing pairs, rates varying per graph."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(4), size=T)
    outcome = (rng.random((T, n, n))[..., None] > probs.cumsum(axis=1)[:, None, None, :]).sum(axis=-1)
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    keys = pd.DataFrame({c: [f"{c}{t}" for t in range(T)] for c in KEY_COLUMNS})
    models = tuple(f"m{i:02d}" for i in range(n))
    return GraphStack(models, adj, adj | adj.swapaxes(1, 2), keys)


# Paper 001, Appendix B.1, as (A vs B, B vs C, A vs C), with items 11 and 12 mirrored (see
# engine/graphs/triads.py).
PAPER_B1 = [
    "> > ~", "> > <", "> ~ ~", "> ~ <", "~ > ~", "~ > <", "~ ~ >", "~ ~ <", "~ < >", "~ < ~",
    "< ~ >", "< ~ ~", "< < >", "< < ~",
]
PAPER_B1_AS_PRINTED_11_12 = ["< > >", "< > ~"]


def code(text: str) -> int:
    a, b, c = (SYM[s] for s in text.split())
    return 9 * a + 3 * b + c


def weakly_prefers(pattern_text: str) -> dict[tuple[int, int], bool]:
    """x ≥ y for positions 0, 1, 2 (A, B, C) from a pattern text."""
    o = dict(zip([(0, 1), (1, 2), (0, 2)], pattern_text.split(), strict=True))
    ge = {}
    for (p, q), s in o.items():
        ge[(p, q)] = s in (">", "~")
        ge[(q, p)] = s in ("<", "~")
    return ge


def is_transitive(pattern_text: str) -> bool:
    """The weak preference ≥ (complete) is transitive: x ≥ y and y ≥ z imply x ≥ z."""
    ge = weakly_prefers(pattern_text)
    return all(
        not (ge[(x, y)] and ge[(y, z)]) or ge[(x, z)]
        for x, y, z in itertools.permutations(range(3))
    )


def test_pattern_table_matches_paper_b1_and_transitivity():
    nontrans = PATTERNS.index[~PATTERNS["transitive"]].tolist()
    assert len(nontrans) == 14 and int(PATTERNS["transitive"].sum()) == 13
    assert nontrans == [code(t) for t in PAPER_B1]  # same set, same order
    assert PATTERNS.loc[nontrans, "pnt_pattern"].tolist() == list(range(1, 15))
    for t in PAPER_B1_AS_PRINTED_11_12:  # as printed these are rankings (B > A > C, B > A ~ C)
        assert is_transitive(t) and PATTERNS.loc[code(t), "transitive"]
    mirror = {">": "<", "<": ">", "~": "~"}
    mirrored = {" ".join(mirror[s] for s in t.split()) for t in PAPER_B1}
    assert mirrored == set(PAPER_B1)
    for pid, row in PATTERNS.iterrows():
        assert row["outcomes"] == " ".join(["> ~ <"[2 * c] for c in (pid // 9, pid // 3 % 3, pid % 3)])
        assert bool(row["transitive"]) == is_transitive(row["outcomes"])
    assert PATTERNS["kind"].value_counts().to_dict() == {
        "order": 6,
        "tied-ends": 6,
        "unchained-ties": 6,
        "tie-top": 3,
        "tie-bottom": 3,
        "cycle": 2,
        "all-tie": 1,
    }


def expected_kind(a: np.ndarray, x: int, y: int, z: int) -> tuple[str, bool] | None:
    """Kind of triple {x, y, z} in adjacency a by counting ties and checking transitivity directly."""
    if not all(a[p, q] or a[q, p] for p, q in ((x, y), (y, z), (x, z))):
        return None
    ge = {(p, q): bool(a[p, q]) for p in (x, y, z) for q in (x, y, z) if p != q}
    transitive = all(
        not (ge[(p, q)] and ge[(q, r)]) or ge[(p, r)] for p, q, r in itertools.permutations((x, y, z))
    )
    tied = [(p, q) for p, q in ((x, y), (y, z), (x, z)) if a[p, q] and a[q, p]]
    if transitive:
        if len(tied) == 0:
            return "order", True
        if len(tied) == 3:
            return "all-tie", True
        (p, q), = tied
        r = ({x, y, z} - {p, q}).pop()
        return ("tie-top" if a[p, r] else "tie-bottom"), True
    return {0: "cycle", 1: "tied-ends", 2: "unchained-ties"}[len(tied)], False


@pytest.mark.parametrize("n", [3, 4, 6, 9])
def test_classify_triples_matches_direct_check(n):
    stack = random_stack(20 + n, 150, n)
    df = classify_triples(stack)
    got = {(int(g), int(a[1:]), int(b[1:]), int(c[1:])): (k, tr) for g, a, b, c, k, tr in
           df[["graph", "model_a", "model_b", "model_c", "kind", "transitive"]].itertuples(index=False)}
    expect = {}
    for t in range(stack.T):
        for x, y, z in itertools.combinations(range(n), 3):
            e = expected_kind(stack.adj[t], x, y, z)
            if e is not None:
                expect[(t, x, y, z)] = e
    assert got == expect
    assert list(df["kind"].cat.categories) == list(KINDS)
    assert df["graph"].is_monotonic_increasing


def test_bad_triads_equal_c3_bad_and_all_ties_explain_the_rest():
    stack = random_stack(5, 400, 8)
    counts = cycle_counts_arrays(stack.adj)
    df = classify_triples(stack)
    bad = np.bincount(df.loc[~df["transitive"], "graph"], minlength=stack.T)
    all_tie = np.bincount(df.loc[df["kind"] == "all-tie", "graph"], minlength=stack.T)
    np.testing.assert_array_equal(bad, counts["c3_bad"])
    np.testing.assert_array_equal(counts["c3"], bad + 2 * all_tie)
    np.testing.assert_array_equal(counts["c3_tie"], 2 * all_tie)
    assert bad.sum() > 100  # the data has plenty of each


def test_strict_cycles_match_networkx_triangles_of_the_win_graph():
    stack = random_stack(9, 60, 8)
    nt = nontransitive_triads(stack)
    for t in range(stack.T):
        wins = stack.wins[t]
        nx_cycles = [c for c in nx.simple_cycles(nx.DiGraph(wins.astype(int)), length_bound=3) if len(c) == 3]
        assert int(((nt["graph"] == t) & (nt["kind"] == "cycle")).sum()) == len(nx_cycles)


def test_orientation_reads_as_the_kind_says():
    stack = random_stack(13, 200, 7)
    nt = nontransitive_triads(stack)
    assert set(nt["kind"]) == {"cycle", "tied-ends", "unchained-ties"}
    pos = {m: i for i, m in enumerate(stack.models)}
    for g, a, b, c, kind in nt.itertuples(index=False):
        adj = stack.adj[g]
        x, y, z = pos[a], pos[b], pos[c]

        def beats(p, q, adj=adj):
            return adj[p, q] and not adj[q, p]

        def tie(p, q, adj=adj):
            return adj[p, q] and adj[q, p]

        if kind == "cycle":
            assert beats(x, y) and beats(y, z) and beats(z, x) and x < y and x < z
        elif kind == "tied-ends":
            assert beats(x, y) and beats(y, z) and tie(x, z)
        else:
            assert tie(x, y) and tie(y, z) and beats(x, z)


def test_cyclic_triads_of_one_graph_and_missing_pairs():
    stack = random_stack(17, 30, 6)
    nt = nontransitive_triads(stack)
    for t in (0, 7, 29):
        one = cyclic_triads(stack, t)
        assert list(one.columns) == ["model_a", "model_b", "model_c", "kind"]
        pd.testing.assert_frame_equal(one, nt[nt["graph"] == t].drop(columns="graph").reset_index(drop=True))
    # a cycle a>b>c>a where the pair (a, c) is marked unobserved is not a triad
    adj = np.zeros((1, 3, 3), dtype=bool)
    adj[0, 0, 1] = adj[0, 1, 2] = adj[0, 2, 0] = True
    obs = adj | adj.swapaxes(1, 2)
    keys = pd.DataFrame({c: ["x"] for c in KEY_COLUMNS})
    full = GraphStack(("a", "b", "c"), adj, obs, keys)
    assert cyclic_triads(full, 0).values.tolist() == [["a", "b", "c", "cycle"]]
    obs = obs.copy()
    obs[0, 0, 2] = obs[0, 2, 0] = False
    assert len(cyclic_triads(GraphStack(("a", "b", "c"), adj, obs, keys), 0)) == 0


def insert_verdicts(store: Store, dataset: str, rows: list[tuple]) -> None:
    """(judge, prompt_id, variant, model_a, model_b, winner) rows straight into the verdicts table."""
    with store.transaction() as con:
        con.execute("INSERT INTO datasets (name) VALUES (?)", [dataset])
        for line, (judge, prompt, variant, a, b, w) in enumerate(rows, start=2):
            con.execute(
                "INSERT INTO verdicts (dataset, judge, prompt_id, variant, model_a, model_b, winner, "
                "category,"
                " source_file, source_line) VALUES (?, ?, ?, ?, ?, ?, ?, 'writing', 'toy.csv', ?)",
                [dataset, judge, prompt, variant, a, b, w, line],
            )


TRIAD_ROWS = [
    # p1 v0: x>y, y>z, z>x (cycle); w ties everyone -> (w,x,y)... see expectations below
    ("j1", "p1", 0, "x", "y", "A"), ("j1", "p1", 0, "y", "z", "A"), ("j1", "p1", 0, "z", "x", "A"),
    # p1 v1: x>y, y>z, x~z (tied-ends); an invalid verdict is stored and left out
    ("j1", "p1", 1, "x", "y", "A"), ("j1", "p1", 1, "y", "z", "A"), ("j1", "p1", 1, "x", "z", "tie"),
    ("j1", "p1", 1, "x", "z", "invalid"),
    # p2: transitive
    ("j1", "p2", 0, "x", "y", "A"), ("j1", "p2", 0, "y", "z", "A"), ("j1", "p2", 0, "x", "z", "A"),
]


def test_triads_command_csv(db_path, capsys):
    store = Store(db_path)
    insert_verdicts(store, "toy", TRIAD_ROWS)
    store.close()
    assert main(["--db", str(db_path), "triads", "--dataset", "toy", "--prompt-id", "p1", "--variant", "0",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out == "model_a,model_b,model_c,kind\nx,y,z,cycle\n"
    assert (
        main(["--db", str(db_path), "triads", "--dataset", "toy", "--prompt-id", "p1", "--format", "csv"])
        == 0
    )
    assert capsys.readouterr().out == (
        "model_a,model_b,model_c,kind,judge,variant,turn\nx,y,z,cycle,j1,0,1\nx,y,z,tied-ends,j1,1,1\n"
    )
    assert (
        main(["--db", str(db_path), "triads", "--dataset", "toy", "--prompt-id", "p2", "--format", "csv"])
        == 0
    )
    assert capsys.readouterr().out == "model_a,model_b,model_c,kind\n"
    assert (
        main(["--db", str(db_path), "triads", "--dataset", "toy", "--prompt-id", "nope", "--format", "csv"])
        == 2
    )
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ") and "'nope'" in captured.err and captured.err.count("\n") == 1
    assert main(["--db", str(db_path), "triads", "--dataset", "missing", "--prompt-id", "p1"]) == 2
    assert "missing" in capsys.readouterr().err


def test_triads_command_on_several_shipped_graphs_keeps_the_contract_first(shipped_db, capsys):
    """Prompt 1 has a graph per judge: the four contract columns first, the graph's key after, and
    each graph's rows are exactly its non-transitive triads (counted by C3_bad, App. A.2)."""

    assert main(["--db", str(shipped_db), "triads", "--dataset", "vicuna80", "--prompt-id", "1",
                 "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "model_a,model_b,model_c,kind,judge,variant,turn"
    df = pd.read_csv(io.StringIO(out))
    with Store(shipped_db) as s:
        v = s.verdicts("vicuna80")
    stack = build_stack(v[v["prompt_id"] == "1"])
    assert stack.T == 6
    bad = dict(zip(stack.keys["judge"], cycle_counts_arrays(stack.adj)["c3_bad"], strict=True))
    assert df.groupby("judge").size().reindex(list(bad), fill_value=0).to_dict() == bad
