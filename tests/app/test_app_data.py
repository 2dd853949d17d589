"""Data, Judges and Theory lab pages: uploads against the store's own counts, κ by a crosstab,
thresholds and recovery by closed forms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app_at, assert_clean, combined_outcomes, own_app, own_app_at, unescape_md  # noqa: F401
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


def test_bad_upload_lists_row_errors_and_stores_nothing(own_app_at):
    at = own_app_at("app_pages/6_data.py")
    assert_clean(at)
    from app_pages._lens import get_store

    before = _counts(get_store())
    at.text_input(key="data_name").input("broken").run()
    at.file_uploader(key="data_upload").set_value(("bad.csv", BAD.encode(), "text/csv")).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows read"] == "4" and metrics["Rejected rows"] == "2" and metrics["Valid rows"] == "2"
    rejected = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert rejected["source_line"].tolist() == [3, 4]
    at.button(key="data_import").click().run()
    refusal = [e.value for e in at.error if "Nothing was stored" in e.value]
    assert refusal and "skip" not in refusal[0].replace("Import only the valid rows", "")  # no CLI flag
    after = _counts(get_store())
    assert after.equals(before) and "broken" not in after.index


def test_good_upload_with_mapped_columns_adds_a_dataset(own_app_at):
    at = own_app_at("app_pages/6_data.py")
    data, n_rows = _good_csv()
    at.text_input(key="data_name").input("mine").run()
    at.file_uploader(key="data_upload").set_value(("mine.csv", data, "text/csv")).run()
    assert any("no prompt_id" in unescape_md(e.value) for e in at.error)  # names differ until mapped
    for target, col in (("prompt_id", "Question ID"), ("model_a", "First"), ("model_b", "Second"),
                        ("winner", "Verdict")):
        at.selectbox(key=f"map_{target}").set_value(col).run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Valid rows"] == str(n_rows)
    at.button(key="data_import").click().run()
    assert_clean(at)
    from app_pages._lens import get_store

    store = get_store()
    assert _counts(store).loc["mine", "verdicts"] == n_rows
    assert at.session_state["dataset"] == "mine"
    stored = store.verdicts("mine")
    assert sorted(stored["prompt_id"].unique()) == [f"q{p}" for p in range(4)]
    assert (stored["winner"].value_counts().sort_index() == pd.Series({"A": 4, "B": 4, "tie": 4})).all()


def test_rename_then_delete_a_dataset(own_app_at):
    from app_pages._lens import get_store

    at = own_app_at("app_pages/6_data.py")
    n = int(_counts(get_store()).loc["vicuna80", "verdicts"])
    at.get("button_group")[0].set_value("Rename / delete").run()
    at.selectbox(key="manage_pick").set_value("vicuna80").run()
    at.text_input(key="manage_new").input("v80").run()
    at.button(key="manage_rename").click().run()
    assert_clean(at)
    assert at.session_state["dataset"] == "v80"
    counts = _counts(get_store()).to_dict()["verdicts"]
    assert {k: v for k, v in counts.items() if k != "chatbot_arena_2024_08_14"} == {"v80": n}  # shipped too
    # the page stays in the section the user was in
    assert at.get("button_group")[0].value == "Rename / delete"
    assert any("Renamed dataset vicuna80 to v80" in s.value for s in at.success)
    at.selectbox(key="manage_pick").set_value("v80").run()
    at.checkbox(key="manage_confirm").check().run()
    at.button(key="manage_delete").click().run()
    assert_clean(at)
    assert list(get_store().datasets()["name"]) == ["chatbot_arena_2024_08_14"]  # the other shipped one
    assert any(f"{n:,} verdicts" in unescape_md(s.value) for s in at.success)
    assert at.get("button_group")[0].value == "Rename / delete"


def test_export_section_offers_verdicts_and_results(app_at):
    at = app_at("app_pages/6_data.py")
    labels = {b.label for b in at.get("download_button")}
    assert not any("verdicts as" in label for label in labels)  # nothing built outside the section
    at.get("button_group")[0].set_value("Export").run()
    assert_clean(at)
    labels = {b.label for b in at.get("download_button")}
    n = int(at.dataframe[0].value.set_index("name").loc["vicuna80", "verdicts"])
    assert f"Download {n:,} verdicts as .csv" in labels and "Download results (.zip)" in labels


def _kappa(items: pd.DataFrame, j1: str, j2: str) -> tuple[float, int]:
    """Cohen's κ of two judges' combined outcomes on their shared items, by a pandas crosstab."""
    key = ["prompt_id", "variant", "turn", "lo", "hi"]
    a = items[items["judge"] == j1].set_index(key)["outcome"]
    b = items[items["judge"] == j2].set_index(key)["outcome"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
    ct = pd.crosstab(both["a"], both["b"]).reindex(
        index=["lo", "tie", "hi"], columns=["lo", "tie", "hi"], fill_value=0
    )
    m = ct.to_numpy(dtype=float) / ct.to_numpy().sum()
    po, pe = np.trace(m), float(m.sum(axis=1) @ m.sum(axis=0))
    return (po - pe) / (1 - pe), len(both)


def _heatmap_z(at) -> tuple[np.ndarray, list[str]]:
    import json

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    z = spec["data"][0]["z"]
    if isinstance(z, dict):
        import base64

        shape = tuple(int(v) for v in str(z["shape"]).split(","))
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape)
    return np.asarray(z, dtype=float), spec["data"][0]["x"]


def test_judges_kappa_matches_a_crosstab(app_at, shipped_store):
    at = app_at("app_pages/5_judges.py")
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    row = table[(table["judge_1"] == "gpt-4") & (table["judge_2"] == "human")].iloc[0]
    items = combined_outcomes(shipped_store.verdicts("vicuna80"))
    kappa, n_items = _kappa(items, "gpt-4", "human")
    assert row["items"] == n_items
    assert math.isclose(row["kappa"], kappa, rel_tol=1e-9)
    judges = sorted(items["judge"].unique())
    mean = np.mean([_kappa(items, a, b)[0] for a, b in itertools.combinations(judges, 2)])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Mean κ over judge pairs"] == f"{mean:.2f}"
    # the page ignores the sidebar's judge and says so; SNTD's empty column is explained
    assert any("all judges" in c.value for c in at.main.get("caption"))
    assert any("prob_a" in i.value for i in at.info)

    at.toggle(key="judges_by_cat").set_value(True).run()
    assert_clean(at)
    per_cat = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    cats = per_cat[(per_cat["judge_1"] == "gpt-4") & (per_cat["judge_2"] == "human")]
    assert cats["items"].sum() == n_items and len(cats) == 9
    # the κ matrix follows the category picked for it
    at.selectbox(key="judges_kappa_cat").set_value("coding").run()
    assert_clean(at)
    z, names = _heatmap_z(at)
    coding = shipped_store.verdicts("vicuna80", category="coding")
    k_coding, _ = _kappa(combined_outcomes(coding), "gpt-4", "human")
    assert math.isclose(z[names.index("gpt-4"), names.index("human")], k_coding, rel_tol=1e-9)


def test_judges_page_on_a_dataset_without_presentation_order(own_app):
    """Verdicts without an order column: the page renders, and says position bias cannot be measured."""
    from app_pages._lens import get_store
    from engine.ingest.importer import store_report, validate_file

    lines = ["prompt_id,model_a,model_b,winner,judge"]
    for p in range(6):
        for judge in ("j1", "j2"):
            lines += [
                f"q{p},x,y,A,{judge}",
                f"q{p},y,z,{'B' if p % 2 else 'tie'},{judge}",
                f"q{p},x,z,A,{judge}",
            ]
    report = validate_file(("\n".join(lines) + "\n").encode(), "no_order.csv", dataset="noorder")
    assert store_report(get_store(), report, "noorder").status == "stored"
    at = own_app.run()
    at.selectbox(key="dataset").set_value("noorder").run()
    at = at.switch_page("app_pages/5_judges.py").run()
    assert_clean(at)
    assert any("shown first" in i.value for i in at.info)
    table = next(d.value for d in at.dataframe if "kappa" in d.value.columns)
    assert table["items"].tolist() == [18] and table["kappa"].tolist() == [1.0]


def test_theory_lab_thresholds_and_closed_form(app_at):
    import json

    at = app_at("app_pages/7_theory_lab.py")
    at.slider(key="lab_n").set_value(12).run()
    at.slider(key="lab_p").set_value(0.2).run()
    at.slider(key="lab_t").set_value(61).run()
    assert_clean(at)
    rate = math.log(1 / (1 - 4 * 0.2**2))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Threshold, all graphs"] == f"{4 * math.log(12) / rate:.1f}"
    assert metrics["Threshold, triangle-free graphs"] == f"{2 * math.log(12) / rate:.1f}"
    # the simulated all-graph recovery at t = 61 is within sampling error of Π P[Bin(61, 0.7) > 30.5]
    exact = binom.sf(30, 61, 0.7) ** (12 * 11 // 2)
    sim = float(metrics["P(recovery) at t = 61"].split(" / ")[0])
    reps = at.select_slider(key="lab_reps").value
    assert abs(sim - exact) < 4 * math.sqrt(exact * (1 - exact) / reps) + 0.01
    # every simulated t is odd (an even t lets a pair split t/2 : t/2)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    line = next(t for t in spec["data"] if t.get("name") == "all graphs (simulated)")
    xs = line["x"]
    if isinstance(xs, dict):
        import base64

        xs = np.frombuffer(base64.b64decode(xs["bdata"]), dtype=np.dtype(xs["dtype"]))
    assert len(xs) > 10 and all(int(x) % 2 == 1 for x in xs)


def test_synthetic_dataset_from_the_data_page_is_ranked_against_its_truth(own_app_at):
    """The Data page adds the labelled synthetic dataset; on the Truncation page keep-K chooses from
    its originals + paraphrases only and the curves use its ground truth (checked with pandas)."""
    from app_pages._lens import get_store
    from engine.ingest.synthetic import SyntheticParams

    at = own_app_at("app_pages/6_data.py")
    at.button(key="synth_make").click().run()
    assert_clean(at)
    store = get_store()
    assert at.session_state["dataset"] == "synthetic-demo"
    ds = store.datasets().set_index("name")
    assert bool(ds.loc["synthetic-demo", "synthetic"]) and ds.loc["synthetic-demo", "description"].startswith(
        "SYNTHETIC"
    )
    p = SyntheticParams()
    v = store.verdicts("synthetic-demo")
    graphs = v.groupby(["prompt_id", "variant"])["variant_kind"].first()
    assert len(graphs) == p.categories * p.prompts * (1 + p.paraphrases + p.samples)
    pool = int((graphs != "sample").sum())
    assert pool == p.categories * p.prompts * (1 + p.paraphrases)
    at = at.switch_page("app_pages/2_truncation.py").run()
    assert_clean(at)
    assert at.slider(key="keep_k").max == pool
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs kept"] == f"{pool // 2} of {pool}"
    captions = " ".join(unescape_md(c.value) for c in at.caption)
    assert f"{len(graphs) - pool} sampling-replicate graph(s) are not in the pool" in captions
    assert "ground truth of the synthetic dataset, 20 models" in captions


def test_the_listing_gives_each_dataset_its_battles(app_at, shipped_store):
    """The Data page's ``battles``: the shipped Chatbot Arena pair counts (no verdicts) sum their file's
    outcomes (pandas over data/chatbot_arena_2024_08_14/pair_counts.csv: the README's 1,670,250), vicuna80
    its verdicts that are not invalid; the CLI's listing says the same."""
    import io
    from pathlib import Path

    from conftest import run_engine

    at = app_at("app_pages/6_data.py")
    assert_clean(at)
    listed = at.dataframe[0].value.set_index("name")
    arena = "chatbot_arena_2024_08_14"
    raw = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / arena / "pair_counts.csv")
    outcomes = [c for c in ("wins_a", "wins_b", "ties", "both_bad") if c in raw.columns]
    assert int(listed.loc[arena, "verdicts"]) == 0
    assert int(listed.loc[arena, "battles"]) == int(raw[outcomes].to_numpy().sum()) == 1_670_250
    winners = shipped_store.cursor().execute("SELECT winner FROM verdicts WHERE dataset = 'vicuna80'").df()
    assert int(listed.loc["vicuna80", "battles"]) == int((winners["winner"] != "invalid").sum())
    cli = run_engine(["--db", str(shipped_store.path), "datasets", "--format", "csv"], check=True).stdout
    by_cli = pd.read_csv(io.StringIO(cli)).set_index("name")["battles"]
    assert by_cli.to_dict() == listed["battles"].astype(int).to_dict()


def test_the_judges_page_names_no_worst_judge_when_there_is_one(tmp_path, migrated_empty_db, shipped_db):
    """One judge: the page's figures leave out "least consistent" and "strongest first-position bias" (they
    named the only judge, whatever its numbers); the shipped six-judge dataset keeps both."""
    from test_active_curves import multi_instance_store

    db = multi_instance_store(tmp_path, migrated_empty_db)
    import pytest
    from apphelpers import new_app

    with pytest.MonkeyPatch.context() as mp:
        one = new_app(db, mp, "app_pages/5_judges.py", {"dataset": "t"})
        labels = {m.label for m in one.metric}
        assert "Judges" in labels and not labels & {"Least consistent judge (PNT)",
                                                     "Strongest first-position bias"}
        six = new_app(shipped_db, mp, "app_pages/5_judges.py")
        both = {"Least consistent judge (PNT)", "Strongest first-position bias"}
        assert both <= {m.label for m in six.metric}
