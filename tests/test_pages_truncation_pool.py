"""The Truncation page's counts without its graphs of fewer than 3 models (issue 26, part i26pages):
``app_pages._lens.truncation_pool_for`` (graphs of 3+ models and a SQL tally, ``engine.store.graph_tally``)
must give the numbers the page took from the whole selection's SliderContext (every graph built): the
graphs, the pool keep-K chooses from, the pool graphs that cannot hold a cycle and so the sampling
replicates left out. Checked on vicuna80 (every graph 3+ models), on datasets that mix graphs of 3+ models
with one-pair graphs (3 judges, paraphrases, samples, turns, orders, repeats, invalid rows, a sparse 70-model
set), on one-pair graphs only (the 1M battle log's shape), with verdicts of one graph disagreeing on their
variant kind (the majority rule, ties to the first by name) and graphs whose verdicts are all invalid, each
whole and filtered by judge and by category."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from seam_data import Shape, fresh_store, import_csv, verdicts, write_csv
from test_cycles3_selection import BIG, ONE_PAIR, mixed_rows

from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.store.connection import Store
from engine.views.appstate import SliderContext


def old_counts(store: Store, dataset: str, **filters) -> tuple[int, int, int]:
    """(graphs, pool, no-cycle) as the page computed them before: every graph built."""
    ctx = SliderContext.of(build_buckets(store.verdicts(dataset, columns=GRAPH_COLUMNS, **filters)))
    return ctx.stack.T, ctx.n_pool, ctx.n_no_cycle


def new_counts(db, monkeypatch, dataset: str, judge=None, category=None) -> tuple[int, int, int]:
    """What the page reads now (the cached ``_lens`` call, from a cold cache)."""
    import streamlit as st

    from app_pages import _lens
    from engine.views.appstate import CacheKey

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        pool = _lens.truncation_pool_for(CacheKey.of(_lens.get_store(), dataset, judge, category))
    assert pool.n_replicates == pool.n_graphs - pool.n_pool - pool.n_no_cycle >= 0
    return pool.n_graphs, pool.n_pool, pool.n_no_cycle


def relabelled(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Rows whose variant kinds disagree inside a graph: in a third of the graphs each verdict gets a kind
    drawn from original / paraphrase / sample / none (ties in the count between sample and another kind
    occur), some graphs' verdicts all made invalid."""
    rng = np.random.default_rng(seed)
    out = rows.copy()
    graph = out.groupby(["judge", "prompt_id", "variant", "turn"], sort=False).ngroup().to_numpy()
    mixed = rng.random(graph.max() + 1) < 0.34
    kinds = np.array(["original", "paraphrase", "sample", None], dtype=object)
    pick = mixed[graph]
    out.loc[pick, "variant_kind"] = kinds[rng.integers(0, 4, int(pick.sum()))]
    dead = (rng.random(graph.max() + 1) < 0.08)[graph]
    out.loc[dead, "winner"] = "invalid"
    return out


def new_store(tmp_path, rows: pd.DataFrame, dataset: str):
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    db = tmp_path / "lens.duckdb"
    store = fresh_store(db)
    record_init_step(store, INIT_STEP, "truncation pool tests: no default dataset")
    record_init_step(store, INIT_STEP_ARENA_COUNTS, "truncation pool tests: no shipped arena counts")
    import_csv(store, write_csv(rows, tmp_path / "v.csv"), dataset)
    return store, db


FILTERS = [{}, {"judge": "j0"}, {"judge": "j1"}, {"category": "c1"}]


@pytest.mark.parametrize("name", list(BIG))
def test_pool_counts_equal_every_graph_on_mixed_datasets(name, tmp_path, monkeypatch):
    rows = relabelled(mixed_rows(BIG[name]), seed=len(name))
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        olds = [old_counts(store, "mix", **f) for f in FILTERS]
    for f, old in zip(FILTERS, olds, strict=True):
        assert new_counts(db, monkeypatch, "mix", **f) == old, f
    graphs, pool, no_cycle = olds[0]
    assert pool > 0 and no_cycle > 0 and graphs - pool - no_cycle > 0  # every kind of graph is there


def test_pool_counts_on_one_pair_graphs_only(tmp_path, monkeypatch):
    """The 1M battle log's shape: no graph can hold a cycle, the pool is empty, nothing of 3+ models."""
    rows = verdicts(ONE_PAIR)
    rows.loc[rows["prompt_id"].astype(int) % 4 == 0, "variant_kind"] = "sample"
    store, db = new_store(tmp_path, relabelled(rows, seed=1), "pairs")
    with store:
        olds = [old_counts(store, "pairs", **f) for f in FILTERS]
    for f, old in zip(FILTERS, olds, strict=True):
        assert new_counts(db, monkeypatch, "pairs", **f) == old, f
    graphs, pool, no_cycle = olds[0]
    assert pool == 0 and no_cycle > 0 and graphs - no_cycle > 0


def test_pool_counts_when_a_kind_ties(tmp_path, monkeypatch):
    """One-pair graphs whose two verdicts name two kinds: sample against paraphrase is a tie that goes to
    paraphrase (first by name, so in the pool), as does sample against none (the import stores a missing
    kind of variant 1 as paraphrase); one graph holds three models so a big graph sits beside them."""
    base = {"judge": "j0", "category": "c0", "variant": 1, "turn": 1, "order": None, "winner": "A"}
    rows = []
    for q, (k1, k2) in enumerate([("sample", "paraphrase"), ("sample", None), ("sample", "original"),
                                  ("paraphrase", "paraphrase"), (None, None), ("sample", "sample")]):
        rows += [{**base, "prompt_id": f"q{q}", "model_a": "a", "model_b": "b", "variant_kind": k1},
                 {**base, "prompt_id": f"q{q}", "model_a": "b", "model_b": "a", "variant_kind": k2}]
    rows += [{**base, "prompt_id": "big", "model_a": x, "model_b": y, "variant_kind": "sample"}
             for x, y in (("a", "b"), ("b", "c"), ("c", "a"))]
    store, db = new_store(tmp_path, pd.DataFrame(rows), "ties")
    with store:
        old = old_counts(store, "ties")
    assert old == (7, 0, 5)  # q5 and big are samples; the other five hold no cycle
    assert new_counts(db, monkeypatch, "ties") == old


def test_pool_counts_on_vicuna80(shipped_db, monkeypatch):
    with Store(shipped_db) as store:
        olds = [old_counts(store, "vicuna80"), old_counts(store, "vicuna80", judge="gpt-4"),
                old_counts(store, "vicuna80", category="writing")]
    assert olds[0][1] > 0
    assert new_counts(shipped_db, monkeypatch, "vicuna80") == olds[0]
    assert new_counts(shipped_db, monkeypatch, "vicuna80", judge="gpt-4") == olds[1]
    assert new_counts(shipped_db, monkeypatch, "vicuna80", category="writing") == olds[2]


def test_sparse_seventy_models_with_samples(tmp_path, monkeypatch):
    shape = Shape(seed=9, n_prompts=20, judges=2, sparse=True, paraphrases=1, samples=2, categories=2,
                  invalid_p=0.1)
    store, db = new_store(tmp_path, relabelled(verdicts(shape), seed=2), "sparse")
    with store:
        olds = [old_counts(store, "sparse", **f) for f in FILTERS[:2]]
    for f, old in zip(FILTERS[:2], olds, strict=True):
        assert new_counts(db, monkeypatch, "sparse", **f) == old, f
