"""The pages' graph read (issue 26, part pages): ``app_pages._lens.stack_for`` reads only the verdict
columns a graph is built from (``engine.graphs.stack.GRAPH_COLUMNS``) and lays the graphs out with a
sort-based distinct (``engine.graphs.distinct``); both must build exactly the graphs the old path
built from every column with ``np.unique``, on vicuna80 and on generated datasets with several judges,
variants, turns, both orders, repeats, invalid rows, judge probabilities, one pair per prompt and a
sparse 70-model set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from seam_data import Shape, imported

from engine.graphs.buckets import GraphBuckets, build_buckets
from engine.graphs.distinct import distinct_sorted
from engine.store.connection import Store

SHAPES = {
    "judges-variants-prob": Shape(seed=3, n_models=6, n_prompts=4, judges=3, turns=2, paraphrases=2,
                                  samples=1, orders="both", tie_p=0.15, invalid_p=0.05, repeats=True,
                                  categories=2, prob=True, annotators=1),
    "mixed-orders-ties": Shape(seed=11, n_models=5, n_prompts=6, judges=2, orders="mixed", tie_p=0.4,
                               repeats=True, samples=2, wider_samples=True),
    "one-pair": Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True, invalid_p=0.05),
    "sparse70": Shape(seed=7, n_prompts=40, judges=2, sparse=True, paraphrases=1, categories=2),
}


@given(hst.lists(hst.integers(-(2**62), 2**62), max_size=200), hst.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_distinct_sorted_is_np_unique(values, spread):
    """Duplicates (values folded onto a few residues), negatives, empty: the same array as np.unique."""
    a = np.asarray(values, dtype=np.int64)
    for arr in (a, a % spread):
        got = distinct_sorted(arr)
        assert got.dtype == np.unique(arr).dtype
        assert np.array_equal(got, np.unique(arr))


def assert_same_graphs(new: GraphBuckets, old: GraphBuckets) -> None:
    """Models, keys, invalid-only keys, policy and every bucket's arrays identical."""
    assert new.models == old.models and new.policy == old.policy and new.T == old.T
    pd.testing.assert_frame_equal(new.keys, old.keys)
    pd.testing.assert_frame_equal(new.invalid_only, old.invalid_only)
    assert [b.k for b in new.buckets] == [b.k for b in old.buckets]
    for x, y in zip(new.buckets, old.buckets, strict=True):
        assert np.array_equal(x.graph, y.graph) and np.array_equal(x.members, y.members)
        assert np.array_equal(x.adj, y.adj) and np.array_equal(x.observed, y.observed)
        assert (x.soft is None) == (y.soft is None)
        if x.soft is not None:
            assert np.array_equal(x.soft, y.soft, equal_nan=True)


def old_path(store: Store, dataset: str, **filters) -> GraphBuckets:
    """The graphs as main e59b42a built them: every verdict column, np.unique for the layout."""
    import engine.graphs.buckets as buckets

    real = buckets.distinct_sorted
    buckets.distinct_sorted = np.unique  # the old layout's distinct, the second path
    try:
        return build_buckets(store.verdicts(dataset, **filters))
    finally:
        buckets.distinct_sorted = real


def page_path(db, monkeypatch, dataset: str, judge=None, category=None) -> GraphBuckets:
    """What the pages hold: ``app_pages._lens.stack_for`` on the store at ``db`` (caches emptied)."""
    import streamlit as st

    from app_pages import _lens
    from engine.views.appstate import CacheKey

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        return _lens.stack_for(CacheKey.of(_lens.get_store(), dataset, judge, category))


@pytest.mark.parametrize("name", list(SHAPES))
def test_page_graphs_equal_the_old_path_on_generated_shapes(name, tmp_path, monkeypatch):
    store, db, rows = imported(tmp_path / name, SHAPES[name])
    judge = sorted(rows["judge"].unique())[-1]
    category = sorted(rows["category"].dropna().unique())[0]
    filters = [{}, {"judge": judge}, {"category": category}]
    with store:
        olds = [old_path(store, "seam", **f) for f in filters]
    for f, old in zip(filters, olds, strict=True):
        assert_same_graphs(page_path(db, monkeypatch, "seam", f.get("judge"), f.get("category")), old)
    if SHAPES[name].prob:  # the judges' probabilities reach the graphs (a read without prob_a loses them)
        assert any(b.soft is not None for b in olds[0].buckets)
    assert olds[0].T > 0
    if not SHAPES[name].one_pair:  # graphs that can hold a cycle are there too
        assert olds[0].n_below(3) < olds[0].T


def test_page_graphs_equal_the_old_path_on_vicuna80(shipped_db, monkeypatch):
    with Store(shipped_db) as store:
        old = old_path(store, "vicuna80")
        old_judge = old_path(store, "vicuna80", judge="gpt-4")
    assert_same_graphs(page_path(shipped_db, monkeypatch, "vicuna80"), old)
    assert_same_graphs(page_path(shipped_db, monkeypatch, "vicuna80", "gpt-4"), old_judge)


def relabelled(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The rows with a third of their categories and variant kinds changed or blanked, so graph keys hold
    disagreeing labels (the majority rule and its first-by-name tie-break decide)."""
    rng = np.random.default_rng(seed)
    out = rows.copy()
    choices = (("category", ["alpha", "beta", None]), ("variant_kind", ["paraphrase", "sample", None]))
    for col, values in choices:
        pick = rng.random(len(out)) < 0.35
        out.loc[pick, col] = rng.choice(np.array(values, dtype=object), int(pick.sum()))
    # judge j0's keys: labels alternate between two names, so a key with an even number of rows ties
    # (the first by name must win)
    j0 = np.flatnonzero((out["judge"] == "j0").to_numpy())
    out.loc[out.index[j0], "category"] = np.where(np.arange(j0.size) % 2 == 0, "zeta", "alpha")
    return out


@pytest.mark.parametrize("policy", ["plurality", "net", "unanimous"])
def test_store_cells_equal_frame_cells_with_disagreeing_labels(policy, tmp_path):
    """graph_cells_from_store against graph_cells on the same store's verdict frame, every policy, on a
    store whose keys disagree on their labels; and on the same verdicts attached as Parquet."""
    from seam_data import import_csv, verdicts, write_csv

    from engine.graphs.cell_query import graph_cells_from_store
    from engine.graphs.stack import graph_cells
    from engine.store.attached import attach

    shape = SHAPES["judges-variants-prob"]
    rows = relabelled(verdicts(shape), 1)
    store, _db, _ = imported(tmp_path / "s", Shape(seed=1, n_prompts=2))  # a store; its own data unused
    with store:
        import_csv(store, write_csv(rows, tmp_path / "relabelled.csv"), "mixed")
        frame = store.verdicts("mixed")
        per_key = frame.groupby(["judge", "prompt_id", "variant", "turn"])["category"]
        assert per_key.nunique().max() > 1
        tied = frame[frame["judge"] == "j0"].groupby(["prompt_id", "variant", "turn"])["category"]
        assert (tied.apply(lambda c: (c == "alpha").sum() == (c == "zeta").sum())).any()  # ties exist
        frame.drop(columns="verdict_id").to_parquet(tmp_path / "mixed.parquet")
        attach(store, "att", str(tmp_path / "mixed.parquet"))
        for dataset in ("mixed", "att"):
            for f in ({}, {"judge": "j1"}):
                old = graph_cells(store.verdicts(dataset, **f), policy=policy)
                new = graph_cells_from_store(store, dataset, policy=policy, **f)
                assert new.models == old.models and new.policy == old.policy
                pd.testing.assert_frame_equal(new.keys, old.keys)
                pd.testing.assert_frame_equal(new.invalid_only, old.invalid_only)
                for name in ("t", "lo", "hi", "outcome"):
                    assert np.array_equal(getattr(new, name), getattr(old, name)), name
                assert new.p_lo is not None and np.array_equal(new.p_lo, old.p_lo, equal_nan=True)
