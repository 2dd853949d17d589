"""The count bootstrap without the per-verdict vote path (issue 26, point 6: ``leaderboard --bootstrap 100``
at ten million battles).

Two changes, each checked against a second path on data that separates them:

- ``count_bootstrap.compact_patterns`` finds the distinct unit rows with one sort of the unit keys and
  counts units of one vote per cell (most of an arena log's prompts) instead of a sparse row each; its
  (patterns, multiplicities, cells) must equal a brute force that groups the votes by unit in Python and
  orders the patterns by their two 64-bit hashes, as the module docstring states (mixed one- and
  several-vote units, repeated cells in a unit, the many-models hashing rule).
- ``count_board.count_leaderboard`` takes the lean DuckDB fetch (``count_query.lean_pair_counts``) with a
  bootstrap too, keeping the verdicts as votes; the board (scores, intervals, ranks, every param) must
  equal the general vote path's, forced by making the lean fetch step aside, for several rankers, the
  three bootstrap units, a log whose prompts hold repeated battles and a sparse 70-model log.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.rankers.votes import Votes
from engine.ranking import count_bootstrap, count_query
from engine.ranking.leaderboard import leaderboard
from tests.test_count_query import battle_log

MASK = (1 << 64) - 1


def random_votes(n: int, m: int, n_units: int, seed: int) -> Votes:
    """m votes over n models in ``n_units`` graphs (so some graphs hold several votes, some one, and a
    graph may repeat a cell); prompts pool every two graphs."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, m)
    b = (a + 1 + rng.integers(0, n - 1, m)) % n
    g = rng.integers(0, n_units, m).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # unsorted keys
    return Votes(tuple(f"m{k:04d}" for k in range(n)), np.minimum(a, b), np.maximum(a, b),
                 rng.integers(-1, 2, m).astype(np.int8), g, g // np.uint64(2), np.arange(m), n_verdicts=m)


def brute_patterns(votes: Votes, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dense (P, C) pattern rows, multiplicities, cell codes) by grouping votes in Python dicts."""
    cells = [int(c) for c in votes.cells()]
    cols = sorted(set(cells))
    at = {c: i for i, c in enumerate(cols)}
    key = {"vote": range(len(cells)), "graph": votes.graph.tolist(), "prompt": votes.prompt.tolist()}[unit]
    units: dict = {}
    for k, c in zip(key, cells, strict=True):
        units.setdefault(k, {}).setdefault(c, 0)
        units[k][c] += 1
    every = 3 * votes.n ** 2
    rng = np.random.default_rng(0x5EED)
    drawn_for = list(range(every)) if every <= count_bootstrap.SEEDED_CELLS_MAX else cols  # the stated rule
    r1, r2 = (dict(zip(drawn_for, (rng.integers(0, 2**63, len(drawn_for), dtype=np.uint64) | 1).tolist(),
                       strict=True)) for _ in range(2))
    patterns: dict = {}
    for row in units.values():
        h = (sum(r1[c] * k for c, k in row.items()) & MASK, sum(r2[c] * k for c, k in row.items()) & MASK)
        if unit == "vote" or all(len(r) == 1 and next(iter(r.values())) == 1 for r in units.values()):
            h = (at[next(iter(row))], 0)  # one vote per unit: the patterns are the cells, in cell order
        patterns.setdefault(h, [row, 0])[1] += 1
    order = sorted(patterns)
    dense = np.zeros((len(order), len(cols)))
    for i, h in enumerate(order):
        for c, k in patterns[h][0].items():
            dense[i, at[c]] = k
    return dense, np.array([patterns[h][1] for h in order]), np.array(cols)


@pytest.mark.parametrize("n,m,n_units,seed", [(6, 400, 250, 0), (30, 2000, 1900, 1), (70, 1500, 1500, 2),
                                              (5, 300, 20, 3), (1300, 120, 100, 4)])
@pytest.mark.parametrize("unit", ["graph", "prompt", "vote"])
def test_compact_patterns_equal_grouping_by_unit(n, m, n_units, seed, unit):
    votes = random_votes(n, m, n_units, seed)
    mat, mult, cols = count_bootstrap.compact_patterns(votes, unit)
    dense, want_mult, want_cols = brute_patterns(votes, unit)
    np.testing.assert_array_equal(cols, want_cols)
    np.testing.assert_array_equal(mult, want_mult)
    np.testing.assert_array_equal(mat.toarray(), dense)
    n_units = m if unit == "vote" else len(set((votes.graph if unit == "graph" else votes.prompt).tolist()))
    assert mult.dtype == np.int64 and int(mult.sum()) == n_units


@pytest.mark.parametrize("cells,n_possible", [([5, 2, 2, 9, 0], 12), ([7], 8), ([3, 3, 3], 4),
                                              ([10**6, 4, 10**6], 2 * 10**6)])
def test_occurring_cells_equal_numpy_unique(cells, n_possible):
    cells = np.array(cells, dtype=np.int64)
    cols, compact = count_bootstrap.occurring_cells(cells, n_possible)
    want_cols, want_inv = np.unique(cells, return_inverse=True)
    np.testing.assert_array_equal(cols, want_cols)
    np.testing.assert_array_equal(compact, want_inv.ravel())


def _boards(store, name, monkeypatch, **kw):
    taken = []
    real = count_query.lean_pair_counts
    monkeypatch.setattr(count_query, "lean_pair_counts",
                        lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    lean = leaderboard(store, name, **kw)
    monkeypatch.setattr(count_query, "lean_pair_counts", lambda *a, **k: None)
    general = leaderboard(store, name, **kw)
    monkeypatch.undo()
    return taken, lean, general


@pytest.fixture(scope="module")
def logs_store(migrated_empty_db, tmp_path_factory):
    """An arena-shaped log over 8 models and a sparse one over 70 (1,500 battles: most of the 2,415 pairs
    never compared), attached as Parquet to one store for the module (the boards only read it); both
    have prompts battled again, ties and invalid verdicts."""
    import shutil

    from engine.store.attached import attach
    from engine.store.connection import Store

    folder = tmp_path_factory.mktemp("lean_bootstrap")
    shutil.copyfile(migrated_empty_db, folder / "lens.duckdb")
    store = Store(folder / "lens.duckdb")
    for name, v in (("arena", battle_log(11, n=1200, n_models=8)), ("sparse70", battle_log(12, n=1500,
                                                                                             n_models=70))):
        path = folder / f"{name}.parquet"
        v.drop(columns=["dataset", "source_file", "source_line"]).to_parquet(path)
        attach(store, name, str(path))
    yield store
    store.close()


@pytest.mark.parametrize("dataset,ranker,unit", [
    ("arena", "bt", None), ("arena", "bt", "prompt"), ("arena", "bt", "vote"),
    ("arena", "davidson", "graph"), ("arena", "winrate", "prompt"), ("arena", "copeland", None),
    ("sparse70", "bt", None), ("sparse70", "rank-centrality", "prompt"),
])
def test_bootstrap_board_from_the_lean_fetch_equals_the_vote_path(logs_store, monkeypatch, dataset, ranker,
                                                                   unit):
    taken, lean, general = _boards(logs_store, dataset, monkeypatch, ranker=ranker, bootstrap=25, seed=3,
                                   bootstrap_unit=unit)
    assert taken and taken[0] is not None and taken[0].votes is not None  # the lean fetch was taken
    assert lean.params == general.params
    pd.testing.assert_frame_equal(lean.table, general.table, check_exact=True)
    assert lean.bootstrap is not None and general.bootstrap is not None
    np.testing.assert_array_equal(lean.bootstrap.samples, general.bootstrap.samples)
    # the data separates the units: some prompts hold several battles, and the intervals are real
    assert lean.params["n_graphs"] < lean.params["n_votes"]
    assert lean.table["ci_low"].notna().all() and (lean.table["ci_high"] > lean.table["ci_low"]).any()


def test_lean_fetch_keeps_votes_only_when_asked(logs_store):
    from engine.ranking.vote_query import store_relation

    con = logs_store.cursor()
    rel = store_relation(logs_store, "arena")
    assert count_query.lean_pair_counts(con, rel).votes is None
    sc = count_query.lean_pair_counts(con, rel, votes_policy="net")
    assert sc.votes is not None and sc.votes.policy == "net" and len(sc.votes) == sc.n_votes
