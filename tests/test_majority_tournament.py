"""The model-level majority tournament (engine/diagnostics/majority_tournament.py) against brute force.

Hypothesis draws small pair counts with uncompared pairs, exact majority ties and half-tie counts; every
fact is recomputed by plain loops: the majority relation pair by pair, cyclic triples by looking at each
triple's two cyclic orders, acyclicity by trying every model order, unbeaten components by reachability,
the Condorcet winner and loser by definition. One CLI run checks ``diagnose --table majority`` on a
pair-count dataset says what the brute force says.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from cli_inprocess import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.diagnostics.majority_tournament import majority_tournament
from engine.ingest.pair_count_files import import_pair_counts
from engine.rankers.votes import PairCounts
from engine.store.connection import Store


@st.composite
def pair_counts(draw):
    n = draw(st.integers(2, 6))
    models = tuple(f"m{i}" for i in range(n))
    W = np.zeros((n, n))
    T = np.zeros((n, n))
    for i, j in itertools.combinations(range(n), 2):
        if draw(st.integers(0, 4)) == 0:
            continue  # uncompared
        W[i, j], W[j, i], t = draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(0, 3))
        if W[i, j] + W[j, i] + t == 0:
            t = 1
        T[i, j] = T[j, i] = t
    zero = np.zeros(n, dtype=np.int64)
    return PairCounts.of_dense(models, W, T, votes=zero, n_graphs=zero, n_prompts=zero)


def brute(pc: PairCounts) -> dict:
    n, wt = pc.n, pc.wtilde()
    met = lambda i, j: wt[i, j] + wt[j, i] > 0  # noqa: E731
    beats = lambda i, j: met(i, j) and wt[i, j] > wt[j, i]  # noqa: E731
    ge = lambda i, j: met(i, j) and wt[i, j] >= wt[j, i]  # noqa: E731
    cyclic, through, strict_cycles = 0, [0] * n, set()
    for tri in itertools.combinations(range(n), 3):
        a, b, c = tri
        orders = [(a, b, c), (a, c, b)]
        has = any(ge(x, y) and ge(y, z) and ge(z, x) for x, y, z in orders)
        all_tie = all(met(x, y) and wt[x, y] == wt[y, x] for x, y in itertools.combinations(tri, 2))
        if has and not all_tie:
            cyclic += 1
            for m in tri:
                through[m] += 1
        if any(beats(x, y) and beats(y, z) and beats(z, x) for x, y, z in orders):
            strict_cycles.add(frozenset(pc.models[m] for m in tri))
    acyclic = any(all(not beats(order[q], order[p]) for p in range(n) for q in range(p + 1, n))
                  for order in itertools.permutations(range(n)))
    reach = [[i == j or beats(i, j) for j in range(n)] for i in range(n)]
    for k, i, j in itertools.product(range(n), repeat=3):
        reach[i][j] = reach[i][j] or (reach[i][k] and reach[k][j])
    comp = [{j for j in range(n) if reach[i][j] and reach[j][i]} for i in range(n)]
    top = [not any(beats(o, m) for m in comp[i] for o in range(n) if o not in comp[i]) for i in range(n)]
    winner = [pc.models[i] for i in range(n) if all(beats(i, j) for j in range(n) if j != i)]
    loser = [pc.models[i] for i in range(n) if all(beats(j, i) for j in range(n) if j != i)]
    rows = pd.DataFrame({
        "model": list(pc.models),
        "majority_wins": [sum(beats(i, j) for j in range(n)) for i in range(n)],
        "majority_losses": [sum(beats(j, i) for j in range(n)) for i in range(n)],
        "majority_ties": [sum(met(i, j) and wt[i, j] == wt[j, i] for j in range(n) if j != i)
                          for i in range(n)],
        "opponents": [sum(met(i, j) for j in range(n) if j != i) for i in range(n)],
        "condorcet_cycles": through, "top_cycle": top,
    })
    return {"cyclic": cyclic, "acyclic": acyclic, "rows": rows, "strict_cycles": strict_cycles,
            "winner": winner[0] if winner else None, "loser": loser[0] if loser else None}


@settings(max_examples=120, deadline=None)
@given(pc=pair_counts())
def test_majority_tournament_equals_brute_force(pc):
    mt, want = majority_tournament(pc), brute(pc)
    facts = mt.summary()
    assert facts["condorcet_cycles"] == want["cyclic"]
    assert facts["acyclic"] == want["acyclic"]
    assert facts["condorcet_winner"] == want["winner"] and facts["condorcet_loser"] == want["loser"]
    got = mt.per_model().set_index("model").loc[list(pc.models)].reset_index()
    pd.testing.assert_frame_equal(got, want["rows"], check_dtype=False)
    listed = mt.cycles(limit=10_000)
    assert {frozenset(r) for r in listed[["a", "b", "c"]].itertuples(index=False)} == want["strict_cycles"]
    assert len(listed) == len(want["strict_cycles"])


def test_cli_majority_table_on_pair_counts(tmp_path):
    """A rock-paper-scissors aggregate plus a model every other beats: one Condorcet cycle, no winner,
    a Condorcet loser, the cycle named in the notes."""
    rows = [("rock", "scissors", 30, 10, 0), ("scissors", "paper", 25, 20, 5), ("paper", "rock", 12, 8, 2),
            ("rock", "weak", 9, 1, 0), ("paper", "weak", 9, 0, 1), ("scissors", "weak", 5, 4, 0)]
    path = tmp_path / "rps.csv"
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "wins_a", "wins_b", "ties"])
    frame.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with Store(db) as store:  # no shipped datasets: the one CLI run reads only this one
        import_pair_counts(store, [path], "rps")
    out = run_engine(["--db", db, "diagnose", "--dataset", "rps", "--table", "majority", "--format", "csv"],
                     check=True)
    assert "1 Condorcet 3-cycles" in out.stderr
    assert "Condorcet winner: none; Condorcet loser: weak" in out.stderr
    assert "cycle paper > rock (0.591) > scissors (0.750) > paper (0.550)" in out.stderr
    table = pd.read_csv(pd.io.common.StringIO(out.stdout)).set_index("model")
    assert table.loc["weak", "majority_losses"] == 3 and table.loc["rock", "condorcet_cycles"] == 1
    assert list(table.index[table["top_cycle"]]) == ["paper", "rock", "scissors"]
