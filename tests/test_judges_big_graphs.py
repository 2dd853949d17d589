"""The Judges page without its graphs of fewer than 3 models (issue 26 point 1, part i26pages, round three):
``app_pages._lens.judge_diagnostics`` now takes the selection's graphs of 3+ models (the Leaderboard's
``cycle_context_for``) and a SQL graph count (``engine.store.graph_tally``) instead of building every graph.
Everything the page shows (κ matrices, agreement, position, the transitivity table with PNT, SNTD, ρ, τ, H²,
the headline judges, how many graphs were left out) must equal the old every-graph path exactly, on vicuna80
and on datasets mixing graphs of 3+ models with one-pair graphs (3 judges, paraphrases, samples, turns, both
and mixed orders, repeats, invalid rows, all-invalid graphs, judge probabilities on big graphs or on one-pair
graphs only, a sparse 70-model set), one-pair graphs only (the 1M battle log's shape) and graphs that name a
third model only in an invalid verdict; whole and for one category, split by category and not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from seam_data import verdicts
from test_cycles3_selection import BIG, ONE_PAIR, mixed_rows
from test_pages_truncation_pool import new_store, relabelled

from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.store.connection import Store
from engine.views.judges_view import judge_overview_of_store


def old_overview(store: Store, dataset: str, category: str | None, by_category: bool):
    """What the page showed before: every graph of the selection built (``stack_for`` of all judges)."""
    graphs = build_buckets(store.verdicts(dataset, columns=GRAPH_COLUMNS, category=category))
    return judge_overview_of_store(store, dataset, category, graphs, by_category)


def new_overview(db, monkeypatch, dataset: str, category: str | None, by_category: bool):
    """What the page reads now: the cached ``_lens`` call, from cold caches."""
    import streamlit as st

    from app_pages import _lens

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        return _lens.judge_diagnostics(dataset, _lens.get_store().dataset_version(dataset), category,
                                       by_category)


def assert_same(new, old) -> None:
    """Every field of the two JudgeOverviews identical (frames exactly, NaN equal to NaN)."""
    for f in dataclasses.fields(old):
        a, b = getattr(new, f.name), getattr(old, f.name)
        if isinstance(b, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=True, obj=f.name)
        elif isinstance(b, dict):
            assert list(a) == list(b), f.name
            for k in b:
                pd.testing.assert_frame_equal(a[k], b[k], check_exact=True, obj=f"{f.name}[{k}]")
        elif isinstance(b, float) and math.isnan(b):
            assert isinstance(a, float) and math.isnan(a), f.name
        else:
            assert a == b, f.name


def compare(tmp_path, monkeypatch, rows: pd.DataFrame, cases) -> list:
    """Import ``rows`` once; for each (category, by_category) the new overview equals the old one. Returns
    the old overviews."""
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        olds = [old_overview(store, "mix", c, by) for c, by in cases]
    for (c, by), old in zip(cases, olds, strict=True):
        assert_same(new_overview(db, monkeypatch, "mix", c, by), old)
    return olds


CASES = [(None, False), (None, True), ("c1", False)]


@pytest.mark.parametrize("name", list(BIG))
def test_judges_page_equals_every_graph_on_mixed_datasets(name, tmp_path, monkeypatch):
    olds = compare(tmp_path, monkeypatch, relabelled(mixed_rows(BIG[name]), seed=len(name)), CASES)
    ov = olds[0]
    assert ov.n_left_out > 0 and len(ov.transitivity) > 0  # both kinds of graph are there
    assert (ov.transitivity["triples"] > 0).all()


def test_probabilities_on_one_pair_graphs_only(tmp_path, monkeypatch):
    """SNTD's table where only the one-pair graphs (left out) carry a judge probability: every graph's
    stack has probabilities, the big graphs' none; the page's table must not change."""
    rows = mixed_rows(BIG["mixed-orders"])
    small = rows["prompt_id"].astype(str).str.startswith("p")
    rows["prob_a"] = np.where(small, np.linspace(0.05, 0.95, len(rows)), np.nan)
    olds = compare(tmp_path, monkeypatch, rows, CASES[:2])
    assert olds[0].has_prob and olds[0].n_left_out > 0


def test_one_pair_graphs_only(tmp_path, monkeypatch):
    """The 1M battle log's shape: no graph has 3 models, nothing is built, every graph is left out."""
    olds = compare(tmp_path, monkeypatch, relabelled(verdicts(ONE_PAIR), seed=4), CASES)
    assert olds[0].n_left_out > 0 and olds[0].transitivity.empty


def test_a_third_model_named_only_by_an_invalid_verdict(tmp_path, monkeypatch):
    """Graphs that the SQL read counts as 3-model (their invalid verdicts name a third model) but whose
    valid verdicts compare 2: read with the big graphs, still left out of the triples."""
    base = {"judge": "j0", "category": "c0", "variant": 1, "turn": 1, "order": "AB",
            "variant_kind": "original"}
    rows = []
    for q in range(6):
        rows += [{**base, "prompt_id": f"q{q}", "model_a": "a", "model_b": "b", "winner": "AB"[q % 2]},
                 {**base, "prompt_id": f"q{q}", "model_a": "b", "model_b": "c", "winner": "invalid"}]
    for q, w in enumerate(("A", "B", "tie")):
        rows += [{**base, "prompt_id": f"big{q}", "model_a": x, "model_b": y, "winner": w, "judge": j}
                 for x, y in (("a", "b"), ("b", "c"), ("c", "a")) for j in ("j0", "j1")]
    olds = compare(tmp_path, monkeypatch, pd.DataFrame(rows), [(None, False), ("c0", True)])
    assert olds[0].n_left_out == 6


def test_judges_page_equals_every_graph_on_vicuna80(shipped_db, monkeypatch):
    with Store(shipped_db) as store:
        olds = [old_overview(store, "vicuna80", None, True),
                old_overview(store, "vicuna80", "writing", False)]
    assert_same(new_overview(shipped_db, monkeypatch, "vicuna80", None, True), olds[0])
    assert_same(new_overview(shipped_db, monkeypatch, "vicuna80", "writing", False), olds[1])
    assert len(olds[0].transitivity) > 0

