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


LOG = "prompt_id,model_a,model_b,winner\n" + "".join(
    f"b{i},{'ab'[i % 2]},{'ba'[i % 2]},{'AB'[i % 3 == 0]}\n" for i in range(1000)) + "".join(
    f"t{i},a,b,A\nt{i},b,c,A\nt{i},c,a,{'AB'[i % 2]}\n" for i in range(3))
"""1,000 one-pair battles of a and b (a battle log's shape) beside three 3-model tournaments."""


def test_cycles_page_says_the_matrices_count_the_left_out_battles(shipped_db, tmp_path, monkeypatch):
    """Audit 37: on a battle log the Cycles page said its one-pair graphs were "left out of every number
    on this page", while its model × model matrices count their battles. The battles matrix's a-b cell
    equals the rows of the file that compare a and b (one-pair battles and tournaments alike), and the
    sentence says the graphs are left out of the cycle numbers only (with a thousands separator)."""
    import base64
    import json

    import numpy as np

    db = _store_with(tmp_path, shipped_db, {"log": LOG})
    at = new_app(db, monkeypatch, "app_pages/3_cycles.py", {"dataset": "log"})
    assert_clean(at)
    [left] = [c.value for c in at.caption if "fewer than 3 models" in c.value]
    assert left.startswith("1,000 graphs of this selection have fewer than 3 models and are left out of "
                           "every cycle and triad number on this page"), left
    assert "matrices count their battles" in left
    at.segmented_control(key="cycles_matrix").set_value("battles").run()
    assert_clean(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    z = spec["data"][0]["z"]  # plotly's binary array: base64 float64 with its shape
    z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(
        [int(n) for n in z["shape"].split(",")])
    names = spec["layout"]["xaxis"]["ticktext"]
    assert names == spec["layout"]["yaxis"]["ticktext"]
    rows = [line.split(",") for line in LOG.splitlines()[1:]]
    ab = sum({m_a, m_b} == {"a", "b"} for _, m_a, m_b, _ in rows)
    assert ab == 1003
    assert z[names.index("a"), names.index("b")] == ab
    at = at.switch_page("app_pages/5_judges.py").run()
    assert_clean(at)
    assert any(i.value.startswith("1,000 graphs of this dataset have fewer than 3 models") for i in at.info)
