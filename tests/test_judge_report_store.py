"""The Judges page's judge report without every graph and every verdict column (issue 26 point 1, part
i26pages): ``judge_report_of_store`` reads only the columns the report uses, builds only the graphs whose
verdicts name 3+ models (the page hands it the ones it cached, ``app_pages._judge_report._report``), counts
the others in SQL, and runs the family rule once per model name. The table and its notes must equal the old
path (every column read, every graph built, ``judge_report`` on that frame) exactly: on vicuna80 (a human
reference, answer texts so length bias and the style fits) and on datasets mixing graphs of 3+ models with
one-pair graphs (3 judges, one named ``human``, one of the models' family, variants, turns, orders, repeats,
invalid rows, all-invalid graphs, probabilities), one-pair graphs only, whole and for one category."""

from __future__ import annotations

import pandas as pd
import pytest
from seam_data import verdicts
from test_cycles3_selection import BIG, ONE_PAIR, mixed_rows
from test_pages_truncation_pool import new_store, relabelled

from engine.diagnostics.judge_report import judge_report, store_lengths, style_length_betas
from engine.store.connection import Store
from engine.views.judge_report_view import judge_report_of_store


def old_report(store: Store, dataset: str, category: str | None) -> tuple[pd.DataFrame, list[str]]:
    """The report as the page computed it before: every verdict column read, every graph built."""
    v = store.verdicts(dataset, category=category)
    lengths = store_lengths(store, dataset)
    judges = sorted(v["judge"].dropna().astype(str).unique())
    betas = style_length_betas(store, dataset, judges, category) if len(lengths) else None
    table = judge_report(v, lengths=lengths, style_betas=betas)
    return table, list(table.attrs.get("notes") or [])


def page_report(db, monkeypatch, dataset: str, category: str | None):
    """What the page shows now: its cached call, from cold caches (the graphs handed over)."""
    import streamlit as st

    from app_pages import _judge_report, _lens

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        return _judge_report._report(dataset, _lens.get_store().dataset_version(dataset), category)


def assert_same(view, old) -> None:
    table, notes = old
    pd.testing.assert_frame_equal(view.table, table, check_exact=True)
    assert view.notes == notes


def renamed_judges(rows: pd.DataFrame) -> pd.DataFrame:
    """j0 becomes the reference ``human``, j1 a judge of family ``m`` (self-preference), and the models
    whose name ends in an even digit family ``x`` (so one model of a pair may be of the judge's family)."""
    def rename(name: str) -> str:
        return f"x{name}" if name[-1] in "02468" else name

    return rows.assign(judge=rows["judge"].replace({"j0": "human", "j1": "m-judge"}),
                       model_a=rows["model_a"].map(rename), model_b=rows["model_b"].map(rename))


@pytest.mark.parametrize("name", ["judges-variants", "sparse70"])
def test_report_equals_every_graph_on_mixed_datasets(name, tmp_path, monkeypatch):
    rows = renamed_judges(relabelled(mixed_rows(BIG[name]), seed=len(name)))
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        olds = [old_report(store, "mix", None), old_report(store, "mix", "c1")]
        assert_same(judge_report_of_store(store, "mix", "c1"), olds[1])  # the CLI/zip path builds its own
    for category, old in zip((None, "c1"), olds, strict=True):
        assert_same(page_report(db, monkeypatch, "mix", category), old)
    table = olds[0][0]
    assert table["triples"].fillna(0).gt(0).any() and table["self_verdicts"].fillna(0).gt(0).any()
    assert table["kappa_by_model"].notna().any()
    assert any("fewer than 3 models" in n for n in olds[0][1])


def test_report_on_one_pair_graphs_only(tmp_path, monkeypatch):
    rows = renamed_judges(relabelled(verdicts(ONE_PAIR), seed=3))
    store, db = new_store(tmp_path, rows, "pairs")
    with store:
        old = old_report(store, "pairs", None)
    assert_same(page_report(db, monkeypatch, "pairs", None), old)
    assert old[0]["triples"].isna().all() or (old[0]["triples"].fillna(0) == 0).all()


def test_report_equals_every_graph_on_vicuna80(shipped_db, monkeypatch):
    with Store(shipped_db) as store:
        old = old_report(store, "vicuna80", None)
    assert old[0]["reference"].eq("human").all() and old[0]["longer_wins"].notna().any()
    assert_same(page_report(shipped_db, monkeypatch, "vicuna80", None), old)


def test_families_once_per_name_equal_the_rule_per_row():
    """``_families`` (the rule run once per distinct name) equals ``Series.map(family)`` row by row, on names
    whose first appearance is not their sorted order, repeated, with a missing name and names of no letter."""
    from engine.diagnostics.judge_report import _families, family

    names = pd.Series(["xm00", "m03", "gpt-4", "xm00", None, "m01", "123", "Claude-3", "m03", "gpt35"] * 7,
                      index=range(100, 170), name="lo")
    pd.testing.assert_series_equal(_families(names), names.map(family), check_exact=True)
    arrow = names.astype("string[pyarrow]")
    assert _families(arrow).tolist() == arrow.map(family).tolist()
