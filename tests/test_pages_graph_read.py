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
