"""The app on battle-shaped data (one model pair per prompt) and on mixed graph sizes: the Truncation
page refuses keep-K in an info box when no graph can hold a cycle, and the Cycles and Judges pages
say how many graphs of fewer than 3 models they left out (counted here from the CSV rows)."""

from __future__ import annotations

import shutil

from apphelpers import assert_clean, new_app


def _store_with(tmp_path, shipped_db, csvs):
    from engine.ingest import importer as ingest
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    store = Store(db)
    for name, text in csvs.items():
        report = ingest.validate_file(text.encode(), f"{name}.csv", dataset=name)
        assert ingest.store_report(store, report, name).status == "stored"
    store.close()
    return db


PAIRS = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c"), ("b", "d"), ("a", "d")] * 2
BATTLES = "prompt_id,model_a,model_b,winner\n" + "".join(
    f"b{i},{x},{y},{'AB'[i % 2]}\n" for i, (x, y) in enumerate(PAIRS))
MIXED = BATTLES + "".join(f"t{i},a,b,A\nt{i},b,c,A\nt{i},c,a,{'AB'[i % 2]}\n" for i in range(3))


def test_truncation_page_refuses_keep_k_on_battles(shipped_db, tmp_path, monkeypatch):
    db = _store_with(tmp_path, shipped_db, {"battles": BATTLES})
    at = new_app(db, monkeypatch, "app_pages/2_truncation.py", {"dataset": "battles"})
    assert_clean(at)
    assert [i.value for i in at.info] == [
        "No graph of this selection can hold a cycle (12 graphs, each with fewer than 3 models or no "
        "compared "
        "triple), so keep-K has no score to keep graphs by."
    ]
    assert not at.slider  # nothing to slide: the page stopped


def test_cycles_and_judges_pages_count_the_left_out_graphs(shipped_db, tmp_path, monkeypatch):
    db = _store_with(tmp_path, shipped_db, {"mixed": MIXED})
    at = new_app(db, monkeypatch, "app_pages/3_cycles.py", {"dataset": "mixed"})
    assert_clean(at)
    assert any(c.value.startswith("12 graphs of this selection have fewer than 3 models and are left out")
               for c in at.caption)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs"] == "3"  # the three tournaments t0..t2
    assert metrics["Graphs with a bad triad"] == "67%"  # t0 and t2 are cycles a>b>c>a, t1 is an order
    at = at.switch_page("app_pages/2_truncation.py").run()
    assert_clean(at)
    assert any("12 graphs cannot hold a cycle" in c.value for c in at.caption)
    at = at.switch_page("app_pages/5_judges.py").run()
    assert_clean(at)
    assert any(i.value.startswith("12 graphs of this dataset have fewer than 3 models") for i in at.info)
