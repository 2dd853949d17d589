"""Data, Judges and Theory lab pages: uploads against the store's own counts, κ by a crosstab,
thresholds and recovery by closed forms."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app, assert_clean, combined_outcomes, own_app  # noqa: F401
from scipy.stats import binom

BAD = (
    "prompt_id,model_a,model_b,winner\n"
    "p1,a,b,A\n"
    "p1,a,a,B\n"  # line 3: the same model twice
    "p2,a,c,maybe\n"  # line 4: unknown winner
    "p2,b,c,tie\n"
)


def _good_csv(n_prompts: int = 4) -> tuple[bytes, int]:
    lines = ["Question ID,First,Second,Verdict"]  # names differ: mapped on the page
    for p in range(n_prompts):
        lines += [f"q{p},x,y,A", f"q{p},y,z,B", f"q{p},x,z,tie"]
    return ("\n".join(lines) + "\n").encode(), 3 * n_prompts


def _counts(store) -> pd.DataFrame:
    return store.datasets().set_index("name")[["verdicts"]]


def test_bad_upload_lists_row_errors_and_stores_nothing(own_app):
    at = own_app.switch_page("pages/6_data.py").run()
    assert_clean(at)
    from pages._lens import get_store

    before = _counts(get_store())
    at.text_input(key="data_name").input("broken").run()
    at.file_uploader(key="data_upload").set_value(("bad.csv", BAD.encode(), "text/csv")).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows read"] == "4" and metrics["Rejected rows"] == "2" and metrics["Valid rows"] == "2"
    rejected = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert rejected["source_line"].tolist() == [3, 4]
    at.button(key="data_import").click().run()
    assert any("Nothing was stored" in e.value for e in at.error)
    after = _counts(get_store())
    assert after.equals(before) and "broken" not in after.index


def test_good_upload_with_mapped_columns_adds_a_dataset(own_app):
    at = own_app.switch_page("pages/6_data.py").run()
    data, n_rows = _good_csv()
    at.text_input(key="data_name").input("mine").run()
    at.file_uploader(key="data_upload").set_value(("mine.csv", data, "text/csv")).run()
    assert any("no prompt_id" in e.value for e in at.error)  # names differ until mapped
    for target, col in (("prompt_id", "Question ID"), ("model_a", "First"), ("model_b", "Second"),
                        ("winner", "Verdict")):
        at.selectbox(key=f"map_{target}").set_value(col).run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Valid rows"] == str(n_rows)
    at.button(key="data_import").click().run()
    assert_clean(at)
    from pages._lens import get_store

    store = get_store()
    assert _counts(store).loc["mine", "verdicts"] == n_rows
    assert at.session_state["dataset"] == "mine"
    stored = store.verdicts("mine")
    assert sorted(stored["prompt_id"].unique()) == [f"q{p}" for p in range(4)]
    assert (stored["winner"].value_counts().sort_index() == pd.Series({"A": 4, "B": 4, "tie": 4})).all()


def test_rename_then_delete_a_dataset(own_app):
    from pages._lens import get_store

    at = own_app.switch_page("pages/6_data.py").run()
    n = int(_counts(get_store()).loc["vicuna80", "verdicts"])
    at.selectbox(key="manage_pick").set_value("vicuna80").run()
    at.text_input(key="manage_new").input("v80").run()
    at.button(key="manage_rename").click().run()
    assert_clean(at)
    assert at.session_state["dataset"] == "v80"
    assert _counts(get_store()).to_dict()["verdicts"] == {"v80": n}
    at.selectbox(key="manage_pick").set_value("v80").run()
    at.checkbox(key="manage_confirm").check().run()
    at.button(key="manage_delete").click().run()
    assert_clean(at)
    assert get_store().datasets().empty
    assert any(f"{n:,} verdicts" in s.value for s in at.success)


def test_judges_kappa_matches_a_crosstab(app, shipped_store):
    at = app.switch_page("pages/5_judges.py").run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    row = table[(table["judge_1"] == "gpt-4") & (table["judge_2"] == "human")].iloc[0]
    items = combined_outcomes(shipped_store.verdicts("vicuna80"))
    a = items[items["judge"] == "gpt-4"].set_index(["prompt_id", "variant", "turn", "lo", "hi"])["outcome"]
    b = items[items["judge"] == "human"].set_index(["prompt_id", "variant", "turn", "lo", "hi"])["outcome"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
    ct = pd.crosstab(both["a"], both["b"]).reindex(index=["lo", "tie", "hi"], columns=["lo", "tie", "hi"], fill_value=0)
    m = ct.to_numpy(dtype=float) / ct.to_numpy().sum()
    po, pe = np.trace(m), float(m.sum(axis=1) @ m.sum(axis=0))
    assert row["items"] == len(both)
    assert math.isclose(row["kappa"], (po - pe) / (1 - pe), rel_tol=1e-9)

    at.toggle(key="judges_by_cat").set_value(True).run()
    assert_clean(at)
    per_cat = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    cats = per_cat[(per_cat["judge_1"] == "gpt-4") & (per_cat["judge_2"] == "human")]
    assert cats["items"].sum() == len(both) and len(cats) == 9


def test_theory_lab_thresholds_and_closed_form(app):
    at = app.switch_page("pages/7_theory_lab.py").run()
    at.slider(key="lab_n").set_value(12).run()
    at.slider(key="lab_p").set_value(0.2).run()
    at.slider(key="lab_t").set_value(60).run()
    assert_clean(at)
    rate = math.log(1 / (1 - 4 * 0.2**2))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Threshold, all graphs"] == f"{4 * math.log(12) / rate:.1f}"
    assert metrics["Threshold, triangle-free graphs"] == f"{2 * math.log(12) / rate:.1f}"
    # the simulated all-graph recovery at t = 60 is within sampling error of Π P[Bin(60, 0.7) > 30]
    exact = binom.sf(30, 60, 0.7) ** (12 * 11 // 2)
    sim = float(metrics["P(recovery) at t = 60"].split(" / ")[0])
    reps = at.select_slider(key="lab_reps").value
    assert abs(sim - exact) < 4 * math.sqrt(exact * (1 - exact) / reps) + 0.01
