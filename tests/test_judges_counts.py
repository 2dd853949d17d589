"""The Judges page's count path (issue 26, part judges3): ``judge_overview_of_store`` groups the
verdicts into counts in DuckDB (engine.diagnostics.judge_counts) instead of building κ items and the
position table from a frame of every verdict. Every table it shows must equal the frame path's
(``with_worst_position(judge_overview(frame))``, main's Judges page) on data that separates them:
several judges, variants, turns, both orders, mixed orders, ties, repeats, invalid rows, categories
(missing ones too), one pair per prompt, a sparse 70-model set, human voters in a battle log,
vicuna80; split by category and not, the whole dataset and one category. The whole overview (whose
transitivity half is shared code) is compared on the human battle log."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from seam_data import Shape, imported

from engine.graphs.buckets import build_buckets
from engine.store.connection import Store
from engine.views.judges_view import JUDGE_COLUMNS, judge_overview_of_store, with_worst_position
from engine.views.viz import judge_overview

SHAPES = {
    "judges-variants-prob": Shape(seed=3, n_models=6, n_prompts=4, judges=3, turns=2, paraphrases=2,
                                  samples=1, orders="both", tie_p=0.15, invalid_p=0.05, repeats=True,
                                  categories=2, prob=True, annotators=1),
    "mixed-orders-ties": Shape(seed=11, n_models=5, n_prompts=6, judges=2, orders="mixed", tie_p=0.4,
                               repeats=True, samples=2, wider_samples=True),
    "one-pair": Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True, invalid_p=0.05,
                      orders="both"),
    "sparse70": Shape(seed=7, n_prompts=40, judges=2, sparse=True, paraphrases=1, categories=2,
                      orders="mixed"),
    "human-battle-log": Shape(seed=13, n_models=5, n_prompts=30, judges=3, annotators=3, one_pair=True,
                              orders="mixed", tie_p=0.3, repeats=True, categories=3),
}


def assert_same_overview(new, old) -> None:
    """Every field the Judges page reads, identical (κ, agreement, position, transitivity, headline)."""
    assert new.judges == old.judges
    for name in ("kappa_matrix", "agreement", "position", "transitivity"):
        pd.testing.assert_frame_equal(getattr(new, name), getattr(old, name), check_exact=True)
    assert (new.kappa_by_category is None) == (old.kappa_by_category is None)
    if old.kappa_by_category is not None:
        assert list(new.kappa_by_category) == list(old.kappa_by_category)
        for cat, mat in old.kappa_by_category.items():
            pd.testing.assert_frame_equal(new.kappa_by_category[cat], mat, check_exact=True)
    assert (new.worst_pnt, new.worst_position, new.has_prob, new.n_left_out) == (
        old.worst_pnt, old.worst_position, old.has_prob, old.n_left_out)
    assert new.mean_kappa == pytest.approx(old.mean_kappa, nan_ok=True, rel=0, abs=0)


def compare_tables(store: Store, dataset: str, category=None) -> None:
    """The count path's agreement and position tables (both splits), judges and has_prob against the
    frame path's on the same verdicts (the transitivity half is shared code, compared once below)."""
    from engine.diagnostics.agreement import agreement
    from engine.diagnostics.judge_counts import agreement_table, judge_counts, position_from_counts
    from engine.diagnostics.position import position_table

    verdicts = store.verdicts(dataset, category=category, columns=JUDGE_COLUMNS)
    counts = judge_counts(store, dataset, category)
    assert counts.judges == tuple(sorted(verdicts["judge"].dropna().astype(str).unique()))
    assert counts.has_prob == bool(verdicts["prob_a"].notna().any())
    for by_category in (False, True):
        pd.testing.assert_frame_equal(agreement_table(counts, by_category),
                                      agreement(verdicts, by_category=by_category), check_exact=True)
        by = ("judge", "category") if by_category else ("judge",)
        pd.testing.assert_frame_equal(position_from_counts(counts, by), position_table(verdicts, by=by),
                                      check_exact=True)


def compare_overviews(store: Store, dataset: str) -> tuple[object, object]:
    """(unsplit, split) frame-path overviews, each equal to the count path's on the same graphs."""
    verdicts = store.verdicts(dataset, columns=JUDGE_COLUMNS)
    stack = build_buckets(store.verdicts(dataset))
    out = []
    for by_category in (False, True):
        old = with_worst_position(judge_overview(verdicts, stack, by_category), verdicts)
        assert_same_overview(judge_overview_of_store(store, dataset, None, stack, by_category), old)
        out.append(old)
    return out[0], out[1]


@pytest.mark.parametrize("name", list(SHAPES))
def test_count_path_tables_equal_the_frame_path_on_generated_shapes(name, tmp_path):
    store, _db, rows = imported(tmp_path / name, SHAPES[name])
    with store:
        compare_tables(store, "seam")
        compare_tables(store, "seam", sorted(rows["category"].dropna().unique())[0])
        verdicts = store.verdicts("seam")
    assert verdicts["judge"].nunique() >= 2 and verdicts["order"].notna().any()


def test_count_path_takes_the_category_of_an_items_first_verdict(tmp_path):
    """Categories drawn per verdict (missing ones too), so one item's verdicts disagree on it: the
    per-category position and κ tables depend on which verdict names the item's category (the frame
    path: its first by verdict id, among all valid verdicts for κ and among those with a known order
    for the paired orders)."""
    from seam_data import import_csv, verdicts, write_csv

    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    rows = verdicts(Shape(seed=17, n_models=4, n_prompts=8, judges=3, orders="mixed", tie_p=0.3,
                          repeats=True, invalid_p=0.05))
    rng = np.random.default_rng(17)
    rows["category"] = rng.choice(np.array(["x", "y", "z", None], dtype=object), len(rows))
    store = Store(tmp_path / "lens.duckdb")
    record_init_step(store, INIT_STEP, "no default dataset")
    record_init_step(store, INIT_STEP_ARENA_COUNTS, "no shipped counts")
    import_csv(store, write_csv(rows, tmp_path / "v.csv"), "mixed")
    with store:
        compare_tables(store, "mixed")
        compare_tables(store, "mixed", "x")
        stored = store.verdicts("mixed")
    per_item = stored.groupby(["judge", "prompt_id", "model_a", "model_b"], dropna=False)["category"].nunique(
        dropna=False)
    assert (per_item > 1).any() and stored["category"].isna().any()


def test_count_path_overview_equals_the_frame_path_on_a_human_battle_log(tmp_path):
    store, _db, _rows = imported(tmp_path / "human", SHAPES["human-battle-log"])
    with store:
        whole, split = compare_overviews(store, "seam")
    assert len(whole.judges) >= 2 and whole.agreement["items"].sum() > 0 and not whole.position.empty
    assert split.kappa_by_category and len(split.kappa_by_category) > 1


def test_count_path_equals_the_frame_path_on_vicuna80(shipped_db):
    with Store(shipped_db) as store:
        compare_tables(store, "vicuna80")
        compare_tables(store, "vicuna80", "writing")
        verdicts = store.verdicts("vicuna80")
    assert verdicts["judge"].nunique() >= 5 and verdicts["order"].notna().any()
