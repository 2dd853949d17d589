"""The Cycles page without its one-pair graphs (issue 26, part cycles3): ``app_pages._lens.cycle_overview``,
``pair_matrices_for`` and the graph table's variant labels now come from the graphs of 3 or more models plus
SQL counts (``engine.views.cycles_view``, ``engine.store.pair_outcomes``). Each must equal what the old path
computed from every graph of the selection (``engine.views.viz.cycle_overview`` and
``engine.views.matrix_view.pair_matrices`` on ``build_buckets`` of every verdict), to the last digit, on
vicuna80 and on generated datasets that mix graphs of 3+ models with one-pair graphs (some the only graph of
their prompt, some a further variant of a prompt with bigger graphs), several judges, variants, turns, both
orders, repeats, invalid rows and a sparse 70-model set, each also filtered by judge and by category."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from seam_data import Shape, fresh_store, import_csv, verdicts, write_csv

from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.store.connection import Store
from engine.views.cycles_view import graphs_table
from engine.views.matrix_view import pair_matrices
from engine.views.viz import graphs_by_score, nb_fit_frame

BIG = {
    "judges-variants": Shape(seed=3, n_models=6, n_prompts=3, judges=3, turns=2, paraphrases=2, samples=1,
                             orders="both", tie_p=0.2, invalid_p=0.08, repeats=True, categories=2, prob=True),
    "mixed-orders": Shape(seed=11, n_models=5, n_prompts=4, judges=2, orders="mixed", tie_p=0.4, repeats=True,
                          samples=2, wider_samples=True, categories=2),
    "sparse70": Shape(seed=7, n_prompts=16, judges=2, sparse=True, paraphrases=1, categories=2,
                      invalid_p=0.1),
}
ONE_PAIR = Shape(seed=5, n_models=6, n_prompts=40, judges=3, one_pair=True, invalid_p=0.05, tie_p=0.3,
                 repeats=True, orders="mixed", categories=2)


def mixed_rows(big: Shape) -> pd.DataFrame:
    """``big``'s graphs, one-pair prompts of their own, and one-pair graphs added to big's prompts as a
    second original (so a listed graph's label, "original 1", depends on a variant the cycle numbers leave
    out)."""
    rows = verdicts(big)
    pairs = verdicts(ONE_PAIR)
    own = pairs[pairs["prompt_id"].astype(int) > 10].assign(prompt_id=lambda f: "p" + f["prompt_id"])
    extra = pairs[pairs["prompt_id"].astype(int) <= 10].copy()
    extra["variant"] = 9
    extra["variant_kind"] = "original"
    extra["judge"] = extra["judge"].where(extra["judge"] != "j2", "j0")
    # the one-pair models renamed onto big's, so the same models meet in both kinds of graph
    names = sorted(set(rows["model_a"]) | set(rows["model_b"]))
    rename = {f"m{i:02d}": names[(i * 7) % len(names)] for i in range(6)}
    extra = extra[extra["prompt_id"].isin(set(rows["prompt_id"]))]
    for frame in (own, extra):
        frame["model_a"] = frame["model_a"].map(rename)
        frame["model_b"] = frame["model_b"].map(rename)
    out = pd.concat([rows, own, extra], ignore_index=True)
    return out[out["model_a"] != out["model_b"]].reset_index(drop=True)


def old_page(store: Store, dataset: str, order_of, mu: float, **filters):
    """What the page showed before: every graph built, overview, matrices and table from them."""
    from engine.views.viz import cycle_overview

    graphs = build_buckets(store.verdicts(dataset, columns=GRAPH_COLUMNS, **filters))
    ov = cycle_overview(graphs, nb_fit=nb_fit_frame)
    mats = pair_matrices(graphs, order_of(list(graphs.models)), ov.per_pair.to_numpy())
    return ov, mats, graphs_table(graphs_by_score(ov.graphs, mu), graphs.keys)


def new_page(db, monkeypatch, dataset: str, order_of, mu: float, judge=None, category=None):
    """What the page shows now: the ``_lens`` / ``_cycles3_cache`` calls of app_pages/3_cycles.py."""
    import streamlit as st

    from app_pages import _cycles3_cache, _lens
    from engine.views.appstate import CacheKey
    from engine.views.matrix_view import pair_matrices_from

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), dataset, judge, category)
        ov = _lens.cycle_overview(key)
        models, W, T, _ = _cycles3_cache.selection_win_ties_for(key)
        mats = pair_matrices_from(models, W, T, order_of(models), ov.per_pair.to_numpy())
        table = graphs_table(graphs_by_score(ov.graphs, mu), _cycles3_cache.listed_prompt_keys_for(key))
    return ov, mats, table


def assert_same_page(new, old) -> None:
    """Every number and frame of the overview, the three matrices and the graph table identical."""
    (ov, mats, table), (ov0, mats0, table0) = new, old
    for name in ("n_graphs", "share_cyclic", "total_bad_triads", "mean_c4_bad", "n_left_out", "nb_caption"):
        assert getattr(ov, name) == getattr(ov0, name), name
    for name in ("per_pair", "category_rates", "graphs"):
        pd.testing.assert_frame_equal(getattr(ov, name), getattr(ov0, name), check_exact=True)
    for name in ("nb_c3", "nb_c4"):
        a, b = getattr(ov, name), getattr(ov0, name)
        assert (a is None) == (b is None)
        if a is not None:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert mats.models == mats0.models
    for name in ("win_fraction", "battles", "bad_triads"):
        pd.testing.assert_frame_equal(getattr(mats, name), getattr(mats0, name), check_exact=True)
    pd.testing.assert_frame_equal(table, table0, check_exact=True)


def reversed_names(models: list[str]) -> list[str]:
    """A ranking that is not the name order, with its last model missing (it goes last by name)."""
    return sorted(models, reverse=True)[:-1]


@pytest.mark.parametrize("name", list(BIG))
def test_cycles_page_equals_every_graph_on_mixed_datasets(name, tmp_path, monkeypatch):
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    rows = mixed_rows(BIG[name])
    db = tmp_path / "lens.duckdb"
    with fresh_store(db) as store:
        record_init_step(store, INIT_STEP, "cycles3 tests: no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "cycles3 tests: no shipped arena counts")
        import_csv(store, write_csv(rows, tmp_path / "v.csv"), "mix")
        filters = [{}, {"judge": "j0"}, {"category": "c1"}]  # a judge of one-pair graphs only: the last test
        mus = (1.0, 0.316, 10.0)
        olds = [old_page(store, "mix", reversed_names, mu, **f) for f, mu in zip(filters, mus, strict=True)]
    for f, mu, old in zip(filters, mus, olds, strict=True):
        assert_same_page(new_page(db, monkeypatch, "mix", reversed_names, mu, **f), old)
    ov0 = olds[0][0]
    assert ov0.n_left_out > 0 and ov0.n_graphs > 0  # both kinds of graph are there
    assert "original 1" in set(olds[0][2]["variant_label"])
    # a one-pair graph's outcome is in the matrices: battles exceed what the big graphs alone hold
    assert float(np.nansum(olds[0][1].battles.to_numpy())) > 2 * float(ov0.graphs.shape[0])


def test_cycles_page_equals_every_graph_on_vicuna80(shipped_db, monkeypatch):
    with Store(shipped_db) as store:
        olds = [old_page(store, "vicuna80", reversed_names, 1.0), old_page(store, "vicuna80", sorted, 3.16,
                                                                            judge="gpt-4")]
    assert_same_page(new_page(shipped_db, monkeypatch, "vicuna80", reversed_names, 1.0), olds[0])
    assert_same_page(new_page(shipped_db, monkeypatch, "vicuna80", sorted, 3.16, judge="gpt-4"), olds[1])


def test_a_selection_of_one_pair_graphs_only(tmp_path, monkeypatch):
    """No graph can hold a triad: nothing built, every graph left out, the matrices still there."""
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    db = tmp_path / "lens.duckdb"
    with fresh_store(db) as store:
        record_init_step(store, INIT_STEP, "cycles3 tests")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "cycles3 tests")
        import_csv(store, write_csv(verdicts(ONE_PAIR), tmp_path / "v.csv"), "pairs")
        old = old_page(store, "pairs", reversed_names, 1.0)
    new = new_page(db, monkeypatch, "pairs", reversed_names, 1.0)
    assert old[0].n_graphs == 0 and old[0].n_left_out > 0
    assert_same_page(new, old)
