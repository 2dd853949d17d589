"""The last audit's app gaps, each driven through AppTest on a temp on-disk store: the synthetic
truth after a rename and for a stale row, a busy store, the Data page's confirmation and error text,
the Truncation captions and axis, the Theory lab's work limit, a single-judge Judges page, and the
Cycles page's bins, ticks, prompt order and variant names. Numbers are recomputed with scipy,
pandas, collections.Counter and by hand."""

from __future__ import annotations

import collections
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app_at, assert_clean, judge_of, new_app, unescape_md  # noqa: F401
from curve_svg_read import page_curves
from scipy.stats import spearmanr

SMALL = {"n_models": 20, "categories": 2, "prompts": 6, "paraphrases": 2, "samples": 2}
"""A synthetic dataset with the 20 models of the paper's setup but few prompts (60 graphs)."""


def _store_with(tmp_path, shipped_db, synthetic: str | None = None, csvs: dict[str, str] | None = None):
    from engine.ingest import importer as ingest
    from engine.ingest.synthetic import SyntheticParams, write_synthetic
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    store = Store(db)
    if synthetic:
        write_synthetic(store, synthetic, SyntheticParams(**SMALL), replace=False)
    for name, text in (csvs or {}).items():
        report = ingest.validate_file(text.encode(), f"{name}.csv", dataset=name)
        assert ingest.store_report(store, report, name).status == "stored"
    store.close()
    return db


def _spec(chart) -> dict:
    return json.loads(chart.proto.spec)


def _array(value) -> np.ndarray:
    if isinstance(value, dict):  # plotly's binary encoding
        import base64

        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value)


def _captions(at) -> str:
    return " ".join(unescape_md(c.value) for c in at.caption)


# ------------------------------------------------------------------ 1. the synthetic ground truth


def test_renamed_synthetic_dataset_keeps_its_truth_and_a_stale_truth_is_not_used(
    shipped_db, tmp_path, monkeypatch
):
    from app_pages._lens import get_store
    from engine.ingest.synthetic import synthetic_truth

    db = _store_with(
        tmp_path,
        shipped_db,
        synthetic="syn",
        csvs={"plain": "prompt_id,model_a,model_b,winner\n1,m01,m02,A\n1,m02,m03,A\n1,m01,m03,A\n"},
    )
    at = new_app(db, monkeypatch, query={"dataset": "syn"})
    assert_clean(at)
    truth = synthetic_truth(get_store(), "syn")

    def distance_matches_truth(at, name):
        board = at.dataframe[0].value.set_index("model")
        rho = spearmanr(board["score"], truth[board.index]).statistic  # scipy, not the engine
        metric = {m.label: m for m in at.metric}["Spearman distance to reference"]
        shown = metric.value
        assert shown == f"{(1 - rho) / 2:.3f}"
        assert f"ground truth of the synthetic dataset, {len(truth)} models" in _captions(at)

    distance_matches_truth(at, "syn")
    at = at.switch_page("app_pages/6_data.py").run()
    at.get("button_group")[0].set_value("Rename / delete").run()
    at.selectbox(key="manage_pick").set_value("syn").run()
    at.text_input(key="manage_new").input("syn2").run()
    at.button(key="manage_rename").click().run()
    assert_clean(at)
    assert at.session_state["dataset"] == "syn2"
    at = at.switch_page("app_pages/1_leaderboard.py").run()
    assert_clean(at)
    distance_matches_truth(at, "syn2")  # the truth moved with the name; the cache is per version

    # a store written before ingest moved truths could hold rows under a plain dataset's name
    with get_store().transaction() as tx:
        tx.execute(
            "INSERT INTO synthetic_truth SELECT 'plain', model, strength, rank, seed FROM synthetic_truth "
            "WHERE dataset = 'syn2'"
        )
    at.selectbox(key="dataset").set_value("plain").run()
    assert_clean(at)
    assert "ground truth" not in _captions(at)
    assert {m.label: m.value for m in at.metric}["Reference"] == "none"


# ------------------------------------------------------------------ 2. a busy store


def test_busy_store_is_a_warning_without_the_server_path_and_pages_stay_reachable(
    shipped_db, tmp_path, monkeypatch
):
    db = tmp_path / "a dir" / "lens.duckdb"  # a space: the path is replaced whole
    db.parent.mkdir()
    shutil.copyfile(shipped_db, db)
    monkeypatch.setenv("LENS_LOCK_WAIT", "0.3")
    at = new_app(db, monkeypatch)
    assert_clean(at)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time; c = duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for page in ("app_pages/4_inspector.py", "app_pages/6_data.py"):
            at = at.switch_page(page).run()  # navigation still registers and runs the page
            assert [e.message for e in at.exception] == []
            warnings = [unescape_md(w.value) for w in at.warning]
            assert warnings == [
                "The store at lens.duckdb is in use by another process (a judge run, an import "
                "or another app); try again when it has finished."
            ]
            assert str(tmp_path) not in " ".join(warnings)
            assert [b.label for b in at.button] == ["Try again"]
            assert any("store is busy" in c.value for c in at.sidebar.caption)
    finally:
        holder.kill()
        holder.wait(timeout=60)
    at.button[0].click().run()  # the retry: the page is back
    assert_clean(at)
    assert at.title[0].value == "Data" and not at.warning


# ------------------------------------------------------------------ 3. the Data page


def test_delete_confirmation_resets_and_errors_show_file_names_as_written(shipped_db, tmp_path, monkeypatch):
    db = _store_with(tmp_path, shipped_db, csvs={"aa": "prompt_id,model_a,model_b,winner\n1,x,y,A\n",
                                                 "bb": "prompt_id,model_a,model_b,winner\n1,x,y,B\n"})
    at = new_app(db, monkeypatch, "app_pages/6_data.py")
    at.get("button_group")[0].set_value("Rename / delete").run()
    at.selectbox(key="manage_pick").set_value("aa").run()
    at.checkbox(key="manage_confirm").check().run()
    assert not at.button(key="manage_delete").disabled
    at.selectbox(key="manage_pick").set_value("bb").run()  # another dataset: the tick does not carry over
    assert at.checkbox(key="manage_confirm").value is False and at.button(key="manage_delete").disabled
    at.checkbox(key="manage_confirm").check().run()
    at.text_input(key="manage_new").input("cc").run()
    at.button(key="manage_rename").click().run()  # renamed: ticked for "bb", which no longer exists
    assert_clean(at)
    assert at.checkbox(key="manage_confirm").value is False
    at.selectbox(key="manage_pick").set_value("cc").run()
    at.checkbox(key="manage_confirm").check().run()
    at.button(key="manage_delete").click().run()
    assert_clean(at)
    from app_pages._lens import get_store

    assert set(get_store().datasets()["name"]) == {"aa", "vicuna80", "chatbot_arena_2024_08_14"}
    assert at.checkbox(key="manage_confirm").value is False  # nothing stays armed after a delete

    # a file name that is a server path and carries Markdown: the message names the file as written
    at.get("button_group")[0].set_value("Import").run()
    name = str(tmp_path / "up load" / "**x** [l](javascript:x).csv")
    at.file_uploader(key="data_upload").set_value((name, b"", "text/csv")).run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and str(tmp_path) not in errors[0]
    assert unescape_md(errors[0]).startswith("**x** [l](javascript:x).csv ")
    assert "\\*\\*x\\*\\*" in errors[0]  # escaped: shown as typed, not bold


# ------------------------------------------------------------------ 4. the Truncation page


def test_truncation_captions_use_engine_sizes_and_flat_curves_keep_a_range(shipped_db, monkeypatch):
    from engine.experiments.protocols import ProtocolParams
    from engine.graphs.cycles import cycle_counts
    from engine.graphs.stack import build_stack
    from engine.store.connection import Store

    # one judge's graphs, as paper 000 (the app opens on all)
    at = new_app(shipped_db, monkeypatch, "app_pages/2_truncation.py", {"judge": "gpt-4"})
    assert_clean(at)
    judge, k = judge_of(at), at.slider(key="keep_k").value
    # the kept graphs' largest S_mu at mu = 1, a whole number: the K-th smallest of C3_bad + C4_bad
    with Store(shipped_db, read_only=True) as store:
        verdicts = store.verdicts("vicuna80", judge=judge)
    counts = cycle_counts(build_stack(verdicts))
    s = np.sort((counts["c3_bad"] + counts["c4_bad"]).to_numpy())
    assert f"(kept: S_μ ≤ {int(s[k - 1])})" in _captions(at)

    p = ProtocolParams()
    at.session_state["protocol_open"] = True  # the protocols' expander, drawn once opened
    at.run()
    sizes = (f"Trunc{p.keep}→{p.draw}", f"Sample{p.keep}→{p.draw}", f"ScoreWin{p.scorewin_draw}",
             f"Random{p.random_pool}→{p.random_draw}×{p.random_reps}", f"Single→{p.single_draw}")
    assert all(x in _captions(at) for x in sizes)
    at.button(key="protocol_go").click().run()
    assert_clean(at)
    # each category's pool is its original prompts (vicuna80 has no paraphrase): counted with pandas
    pools = verdicts[verdicts["variant_kind"] != "sample"].groupby("category")["prompt_id"].nunique()
    assert (
        f"the {len(pools)} categories here hold {pools.min()}–{pools.max()} graphs each to keep {p.keep} from"
        in _captions(at)
    )

    curves = page_curves(at)
    assert len(curves) == 2
    for got in curves:  # keep-K and mu curves (inline SVG)
        lo, hi = got["y_lo"], got["y_hi"]
        ys = np.array([m[c] for m in got["markers"] for c in ("mean", "lo", "hi", "point")], dtype=float)
        assert hi - lo >= 0.05 - 1e-12 and lo <= np.nanmin(ys) and hi >= np.nanmax(ys) and lo >= 0


# ------------------------------------------------------------------ 5. the Theory lab


def test_theory_lab_runs_light_settings_waits_for_heavy_ones_and_refuses_too_heavy(app_at):
    at = app_at("app_pages/7_theory_lab.py")
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1  # the opening setting runs live

    def work(n, t_max, reps):  # n² · reps · Σ odd t, with the grid written out by hand
        raw = np.linspace(1, t_max, 25)
        ts = sorted({int(2 * ((x - 1) // 2) + 1) for x in raw})
        return n * n * reps * sum(ts)

    at.slider(key="lab_n").set_value(30).run()
    at.slider(key="lab_t").set_value(399).run()
    at.select_slider(key="lab_reps").set_value(800).run()
    assert_clean(at)
    assert not at.get("plotly_chart")
    assert [w.value for w in at.warning] == [
        f"This setting is too heavy for a shared server (n² · replicates · Σt = {work(30, 399, 800):.2g}, "
        "the limit "
        "is 1e+09): use at most 200 replicates."
    ]
    assert work(30, 399, 200) <= 1e9 < work(30, 399, 400)  # the suggestion is the largest that fits
    at.select_slider(key="lab_reps").set_value(100).run()
    assert not at.get("plotly_chart") and at.button(key="lab_go")
    assert f"{work(30, 399, 100) / 4e7:.1f}× the work" in at.info[0].value
    at.slider(key="lab_t").set_value(21).run()  # 30² · 100 · Σt is light again: no button
    assert len(at.get("plotly_chart")) == 1 and not at.get("button")


# ------------------------------------------------------------------ 6. the Judges page


def _orders_csv() -> str:
    """Judge 'one' sees every pair once (x first); judge 'two' sees x-y in both orders."""
    rows = ["prompt_id,model_a,model_b,winner,judge,order"]
    for p in range(4):
        rows += [f"q{p},x,y,A,one,AB", f"q{p},y,z,A,one,AB", f"q{p},x,z,A,one,AB",
                 f"q{p},x,y,A,two,AB", f"q{p},y,x,B,two,AB", f"q{p},y,z,B,two,AB"]
    return "\n".join(rows) + "\n"


def test_judges_page_with_one_judge_and_the_position_bias_of_both_order_judges(
    shipped_db, tmp_path, monkeypatch
):
    solo = "prompt_id,model_a,model_b,winner,judge\n" + "".join(
        f"p{i},a,b,A,only\np{i},b,c,A,only\np{i},a,c,B,only\n" for i in range(3))
    db = _store_with(tmp_path, shipped_db, csvs={"solo": solo, "orders": _orders_csv()})
    at = new_app(db, monkeypatch, "app_pages/5_judges.py", {"dataset": "solo"})
    assert_clean(at)
    assert any("single judge (only)" in i.value and "no κ matrix" in i.value for i in at.info)
    assert not at.get("plotly_chart")
    assert {m.label: m.value for m in at.metric}["Mean κ over judge pairs"] == "—"

    at.selectbox(key="dataset").set_value("orders").run()
    assert_clean(at)
    # by hand: 'one' shows the first answer winning 12 of 12 (|1 - ½| = ½) but never swaps an order;
    # 'two' (every row AB: A shown first) wins first 4 of 12 (|⅓ - ½|): only 'two' can show a bias
    v = pd.read_csv(pd.io.common.StringIO(_orders_csv()))
    first_won = (v["winner"] == "A").groupby(v["judge"]).mean()
    assert first_won.to_dict() == {"one": 1.0, "two": pytest.approx(4 / 12)}
    assert {m.label: m.value for m in at.metric}["Strongest first-position bias"] == "two"
    assert len(at.get("plotly_chart")) == 1  # two judges: the κ heatmap is back


# ------------------------------------------------------------------ 7. the Cycles page


def test_cycles_page_integer_bins_ticks_natural_order_and_variant_names(shipped_db, tmp_path, monkeypatch):
    from engine.store.connection import Store

    db = _store_with(tmp_path, shipped_db, synthetic="syn")
    at = new_app(db, monkeypatch, "app_pages/3_cycles.py", {"dataset": "syn"})
    assert_clean(at)
    charts = [_spec(c) for c in at.get("plotly_chart")]
    pair_map = charts[0]
    assert len(pair_map["data"][0]["x"]) == 20
    # 20 models: every label shown, at least 9 px, rows at least 1.25 font sizes apart
    # (engine.views.matrix_view)
    assert len(pair_map["layout"]["yaxis"]["tickvals"]) == 20
    font = pair_map["layout"]["yaxis"]["tickfont"]["size"]
    assert font >= 9 and pair_map["layout"]["xaxis"]["tickfont"]["size"] >= 9
    assert pair_map["layout"]["height"] >= 20 * 1.25 * font + 50  # 20 rows, each 1.25 font sizes high
    assert pair_map["data"][0]["zmin"] == 0
    assert pair_map["layout"]["xaxis"]["tickangle"] == -90

    table = at.dataframe[0].value
    for spec, name in ((charts[2], "c3_bad"), (charts[3], "c4_bad")):
        x, y = _array(spec["data"][0]["x"]).astype(int), _array(spec["data"][0]["y"]).astype(int)
        seen = collections.Counter(table[name].astype(int))
        assert x.tolist() == list(range(max(seen) + 1))  # one bar per whole number, gaps included
        assert y.tolist() == [seen.get(k, 0) for k in x]
        assert (
            spec["layout"]["xaxis"].get("dtick", 1) == 1 or spec["layout"]["xaxis"].get("tickformat") == "d"
        )

    with Store(db, read_only=True) as store:
        v = store.verdicts("syn")
    kinds = v.groupby(["prompt_id", "variant"])["variant_kind"].first()
    for row in table.itertuples():
        kind = kinds[(row.prompt_id, row.variant)]
        same = sorted(var for (p, var), kd in kinds.items() if p == row.prompt_id and kd == kind)
        want = "original" if kind == "original" else f"{kind} {same.index(row.variant) + 1}"
        assert row.variant_label == want
    assert {"original", "paraphrase 2", "sample 2"} <= set(table["variant_label"])
    # equal S_mu: prompt ids in numeric order ("2" before "10")
    for _, grp in table.groupby("s_mu", sort=False):
        ids = [int(p) for p in grp["prompt_id"]]
        assert ids == sorted(ids)
    at = at.switch_page("app_pages/4_inspector.py").run()
    assert_clean(at)
    # the picker lists prompts worst first (S_μ summed over the prompt's graphs), equal S_μ in natural order
    labels = at.selectbox(key="insp_prompt").options
    prompts = [lab.split(" · ")[0] for lab in labels]
    s_mu = [float(lab.split("S_μ ")[1].split(" ")[0]) for lab in labels]
    expect = table.groupby(table["prompt_id"].astype(str))["c3_bad"].sum() + \
        table.groupby(table["prompt_id"].astype(str))["c4_bad"].sum()
    assert s_mu == [float(expect[p]) for p in prompts] and s_mu == sorted(s_mu, reverse=True)
    for value in set(s_mu):
        ids = [int(p) for p, v in zip(prompts, s_mu, strict=True) if v == value]
        assert ids == sorted(ids)
    assert "10" in prompts
    variant_box = at.selectbox(key="insp_variant")
    assert variant_box.options == ["original", "paraphrase 1", "paraphrase 2", "sample 1", "sample 2"]


def test_a_distance_over_fewer_than_three_reference_models_says_how_many(shipped_db, tmp_path, monkeypatch):
    """Two of the dataset's models are on the reference (the third is not): the headline distance is 0 or 1
    whatever the scores, so its value names the 2 models it is over; the number itself is ``(1 − ρ)/2``
    recomputed here from the board's scores and the reference's ratings (scipy). A dataset with three models
    on it shows the bare number."""
    from engine.ranking.reference import DEFAULT_REFERENCE

    full = json.loads(DEFAULT_REFERENCE.read_text())["full"]
    g4, ll, zz = "gpt-4-0314", "llama-13b", "zz-unrated"
    games = [(g4, ll, "A"), (g4, zz, "A"), (ll, zz, "B"), (g4, ll, "B"), (ll, g4, "A"), (g4, ll, "A")]
    rows = "prompt_id,model_a,model_b,winner\n" + "".join(f"{i},{a},{b},{w}\n"
                                                          for i, (a, b, w) in enumerate(games))
    three = rows.replace("zz-unrated", "vicuna-13b")
    db = _store_with(tmp_path, shipped_db, csvs={"few": rows, "three": three})
    for name, rated in (("few", [g4, ll]), ("three", [g4, ll, "vicuna-13b"])):
        at = new_app(db, monkeypatch, query={"dataset": name})
        assert_clean(at)
        metric = {m.label: m for m in at.metric}["Spearman distance to reference"]
        shown = metric.value
        board = at.dataframe[0].value.set_index("model")
        rho = spearmanr(board.loc[rated, "score"], [full[m]["rating"] for m in rated]).statistic
        suffix = " (2 models)" if len(rated) == 2 else ""
        assert shown == f"{(1 - rho) / 2:.3f}{suffix}", (name, shown)
        said = f"{shown} {metric.help}"  # nits39: the count once, in the value or else in the help
        assert len(re.findall(rf"\b{len(rated)} models\b", said)) == 1 and "(1 − ρ)/2 over" in said, said
