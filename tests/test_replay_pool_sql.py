"""The replay pool numbered in DuckDB (engine/store/verdict_codes.py, ``load_replay_source``) against the
frame path it replaced (``source_from_frame`` over ``store.verdicts``): the same items, codes, prompt
table, winners and prob_a, and the same next batches downstream, on generated datasets that separate the
paths (several judges, both orders and one order, repeats, variants and turns, a sparse 70-model set,
one pair per prompt, categories with NULLs, names whose byte order differs from their number order),
stored and attached as Parquet; and the two counting shortcuts (pair ids, revealed counts) against the
sort and the full pass they replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from seam_data import Shape, import_csv, write_csv
from seam_data import verdicts as shape_rows

from engine.judging.active.fit import Revealed, counts_matrix
from engine.judging.active.replay import REPLAY_COLUMNS, load_replay_source, source_from_frame
from engine.store.connection import Store
from engine.views.active_curves import measured
from engine.views.active_view import STRATEGIES, next_batch

NAMES = ["Zeta", "alpha", "Élan", "émile", "b-10", "b-9", "B_2", "ß"]
"""Model and judge names whose sorted order is not their generated order (case, accents, digits)."""

SHAPES = {
    "judges-both-repeats": Shape(seed=3, n_models=6, n_prompts=7, judges=3, turns=2, paraphrases=1,
                                 orders="both", repeats=True, tie_p=0.15, invalid_p=0.05, categories=2,
                                 prob=True),
    "sparse70-mixed": Shape(seed=5, n_prompts=32, sparse=True, orders="mixed", judges=2, categories=2),
    "one-pair-AB": Shape(seed=7, n_models=6, n_prompts=40, one_pair=True, orders="AB", judges=2, samples=1),
    "annotators-none": Shape(seed=11, n_models=5, n_prompts=12, annotators=2, orders="none", samples=2,
                             repeats=True),
}


def _rows(shape: Shape) -> pd.DataFrame:
    rows = shape_rows(shape)
    if shape.n_models <= len(NAMES) and not shape.sparse:
        rename = {f"m{i:02d}": NAMES[i] for i in range(shape.n_models)}
        rows["model_a"], rows["model_b"] = rows["model_a"].map(rename), rows["model_b"].map(rename)
    rows["judge"] = rows["judge"].map({"j0": "gpt-4", "j1": "Claude", "j2": "ä-human"})
    rows.loc[rows["prompt_id"] == "2", "category"] = None  # a prompt with no category
    three = rows.index[rows["prompt_id"] == "3"]
    rows.loc[three[1::2], "category"] = "later"  # an instance whose verdicts disagree: its first one counts
    return rows


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Each shape imported into its own store as the CLI imports it (and its generated rows)."""
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    out = {}
    for name, shape in SHAPES.items():
        folder = tmp_path_factory.mktemp(name)
        store = Store(folder / "lens.duckdb")
        record_init_step(store, INIT_STEP, "no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "no shipped counts")
        rows = _rows(shape)
        import_csv(store, write_csv(rows, folder / "v.csv"), "src")
        out[name] = (store, rows, folder)
    yield out
    for store, _, _ in out.values():
        store.close()


def _frame_path(store: Store, dataset: str, judge=None, models=None):
    """The pool as 0.11.0 built it: every verdict read as a frame, filtered in pandas."""
    v = store.verdicts(dataset, columns=list(REPLAY_COLUMNS))
    if judge is not None:
        v = v[v["judge"] == judge]
    if models:
        v = v[v["model_a"].isin(models) & v["model_b"].isin(models)]
    return source_from_frame(v[v["model_a"] != v["model_b"]], dataset)


def _assert_same(new, old) -> None:
    a, b = new.pool, old.pool
    assert a.models == b.models and a.judges == b.judges
    for name in ("prompt", "a", "b", "order", "judge"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    pd.testing.assert_frame_equal(a.prompt_table, b.prompt_table)
    assert np.array_equal(new.verdict_id, old.verdict_id)
    assert new.winner.dtype == old.winner.dtype and np.array_equal(new.winner, old.winner)
    assert np.array_equal(new.prob_a, old.prob_a, equal_nan=True)


@pytest.mark.parametrize("name", list(SHAPES))
def test_coded_read_equals_the_frame_path(stores, name):
    store, rows, _ = stores[name]
    judges = sorted(rows["judge"].unique())
    models = sorted(set(rows["model_a"]) | set(rows["model_b"]))
    cases = [(None, None), (judges[-1], None), (None, models[1:-1]), (judges[0], models[::2])]
    for judge, keep in cases:
        _assert_same(load_replay_source(store, "src", judge=judge, models=keep),
                     _frame_path(store, "src", judge, keep))
    # the shapes separate the orders: sorted text is not generated order, and "10" sorts before "2"
    pool = load_replay_source(store, "src").pool
    assert list(pool.models) == sorted(pool.models)
    ids = pool.prompt_table["prompt_id"].tolist()
    assert ids == sorted(ids)
    if SHAPES[name].n_prompts >= 10:
        assert ids != sorted(ids, key=int)


def test_next_batches_equal_on_both_paths(stores):
    store, _, _ = stores["judges-both-repeats"]
    new = measured("src", *[(s.pool, s.winner, s.verdict_id) for s in [load_replay_source(store, "src")]][0])
    old_src = _frame_path(store, "src")
    old = measured("src", old_src.pool, old_src.winner, old_src.verdict_id)
    assert np.array_equal(new.reference, old.reference)
    for strategy in STRATEGIES:
        got, want = next_batch(new, strategy, 40, 15, seed=2), next_batch(old, strategy, 40, 15, seed=2)
        pd.testing.assert_frame_equal(got.table, want.table)
        assert (got.separated_pairs, got.mean_ci_width) == (want.separated_pairs, want.mean_ci_width)


def test_attached_parquet_equals_the_frame_path(stores):
    """Attached verdicts number their rows in the query (row_number): one query numbers them once."""
    from engine.store.attached import attach

    store, rows, folder = stores["one-pair-AB"]
    path = folder / "log.parquet"
    rows.drop(columns=["battle_id", "annotator"]).to_parquet(path)
    attach(store, "log", str(path))
    _assert_same(load_replay_source(store, "log"), _frame_path(store, "log"))
    # a NULL judge (possible only in files read in place) keeps the frame path, which names it as text
    nul = rows.drop(columns=["battle_id", "annotator"]).astype({"judge": object})
    nul.loc[nul.index[:3], "judge"] = None
    nul.to_parquet(folder / "nul.parquet")
    attach(store, "nul", str(folder / "nul.parquet"))
    got, want = load_replay_source(store, "nul"), _frame_path(store, "nul")
    _assert_same(got, want)
    assert len(got.pool) == len(nul)


def test_pair_ids_equal_numpy_unique(stores):
    pool = load_replay_source(stores["sparse70-mixed"][0], "src").pool
    values, inverse = np.unique(pool.lo.astype(np.int64) * pool.n_models + pool.hi, return_inverse=True)
    assert pool.pair_values.dtype == values.dtype and np.array_equal(pool.pair_values, values)
    assert np.array_equal(pool.pair_id, inverse)


def test_revealed_counts_equal_the_full_pass(stores):
    src = load_replay_source(stores["judges-both-repeats"][0], "src")
    pool, rng = src.pool, np.random.default_rng(4)
    revealed = Revealed.empty(pool)
    items = rng.choice(len(pool), len(pool) // 3, replace=False)
    revealed.record_winners(items, src.winner[items])
    revealed.record(items[:5], wins_a=np.ones(5), ties=np.full(5, 2.0))  # repeated answers of one item
    m = pool.n_models
    a, b = pool.a.astype(np.int64), pool.b.astype(np.int64)
    half = 0.5 * revealed.ties.astype(np.float64)
    full = np.bincount(a * m + b, weights=revealed.wins_a + half, minlength=m * m)
    full += np.bincount(b * m + a, weights=revealed.wins_b + half, minlength=m * m)
    assert np.array_equal(counts_matrix(pool, revealed), full.reshape(m, m))
