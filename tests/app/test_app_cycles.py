"""Cycles and Prompt inspector pages on the shipped data, checked against brute-force counts."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import (  # noqa: F401
    app,
    app_at,
    assert_clean,
    bad_triads_bruteforce,
    combined_outcomes,
    graph_digraph,
    judge_of,
    old_pick_labels,
    unescape_md,
)


def _judge_pairs(shipped_store, judge: str) -> pd.DataFrame:
    return combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))


def test_cycles_page_counts_match_bruteforce(app_at, shipped_store):
    at = app_at("app_pages/3_cycles.py")
    assert_clean(at)
    judge = judge_of(at)
    pairs = _judge_pairs(shipped_store, judge)
    per_graph = {
        key: len(bad_triads_bruteforce(graph_digraph(g)))
        for key, g in pairs.groupby(["judge", "prompt_id", "variant", "turn"])
    }
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs"] == str(len(per_graph))
    assert metrics["Bad triads in all"] == str(sum(per_graph.values()))
    share = sum(v > 0 for v in per_graph.values()) / len(per_graph)
    assert metrics["Graphs with a bad triad"] == f"{share:.0%}"
    table = at.dataframe[0].value
    worst = table.sort_values("c3_bad", ascending=False).iloc[0]
    assert worst["c3_bad"] == max(per_graph.values())


def graphs_shown(at) -> pd.DataFrame:
    """The Cycles page's per-graph table (the dataframe with S_μ), as the page passed it."""
    [table] = [d.value.reset_index(drop=True) for d in at.dataframe if "s_mu" in d.value.columns]
    return table


def test_cycles_table_opens_the_inspector(app_at):
    at = app_at("app_pages/3_cycles.py")
    # the picker's options, one per row of the table shown (several judges), as the old per-option path
    # wrote them: a whole μ, then a fractional one (S_μ with decimals, the rows re-ordered)
    assert at.selectbox(key="cycles_pick").options == old_pick_labels(graphs_shown(at), 1.0)
    at.select_slider(key="cycles_mu").set_value(0.316).run()
    fractional = old_pick_labels(graphs_shown(at), 0.316)
    assert at.selectbox(key="cycles_pick").options == fractional
    assert any("." in label.rsplit("S_μ=", 1)[1] for label in fractional)
    at.selectbox(key="cycles_pick").set_value(2).run()
    row = at.dataframe[0].value.iloc[2]
    at.button(key="cycles_open").click().run()
    assert_clean(at)
    assert at.title[0].value.endswith("Prompt inspector")
    assert at.selectbox(key="insp_prompt").value == str(row["prompt_id"])


def test_inspector_triad_shows_its_verdicts(app_at, shipped_store):
    from engine.views.graph_html import VIOLET, page_panels

    at = app_at("app_pages/4_inspector.py")
    assert_clean(at)
    judge = at.selectbox(key="insp_judge").value
    prompt = at.selectbox(key="insp_prompt").value
    pairs = _judge_pairs(shipped_store, judge)
    mine = pairs[pairs["prompt_id"] == prompt]
    expected = bad_triads_bruteforce(graph_digraph(mine))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Bad triads"] == str(len(expected))
    options = at.selectbox(key="insp_triad").options
    assert len(at.dataframe) == 0  # the table of every bad triad is drawn once its expander is opened
    at.session_state["insp_all_triads"] = True
    at.run()
    assert len(options) == len(at.dataframe[0].value) == len(expected)

    last = len(options) - 1
    at.selectbox(key="insp_triad").set_value(last).run()
    assert_clean(at)
    headings = [
        unescape_md(m.value.strip("*")) for m in at.markdown if " vs " in m.value and m.value.startswith("**")
    ]
    assert len(headings) == 3  # one per pair of the triad, not one per verdict
    trio = set()
    raw = shipped_store.verdicts("vicuna80", judge=judge)
    raw = raw[raw["prompt_id"] == prompt]
    n_verdicts = 0
    for h in headings:
        pair, result = h.split(": ", 1)[0], h.rsplit(" → ", 1)[1]
        a, b = pair.split(" vs ")
        trio |= {a, b}
        lo, hi = sorted((a, b))
        out = mine[(mine["lo"] == lo) & (mine["hi"] == hi)]["outcome"].iloc[0]
        assert result == ("tie" if out == "tie" else f"{lo if out == 'lo' else hi} wins")
        n_verdicts += int((((raw["model_a"] == a) & (raw["model_b"] == b))
                           | ((raw["model_a"] == b) & (raw["model_b"] == a))).sum())
    assert frozenset(trio) in expected
    assert sum(m.value.startswith("Verdict ") for m in at.markdown) == n_verdicts
    rationales = set(raw["explanation"].dropna())
    assert sum(t.value in rationales for t in at.text) >= 3
    # the drawing highlights exactly the chosen triad's three pairs
    before = page_panels(at.get("iframe")[0].proto.srcdoc)[0]
    names = {n["id"]: n["label"] for n in before["nodes"]}
    violet = {frozenset((names[e["from"]], names[e["to"]])) for e in before["edges"]
              if e["color"]["color"] == VIOLET}
    assert violet == {frozenset(p) for p in itertools.combinations(trio, 2)}
    # switching the denoiser redraws the right-hand graph only
    at.get("button_group")[0].set_value("ELSPR").run()
    assert_clean(at)
    panels = page_panels(at.get("iframe")[0].proto.srcdoc)
    assert panels[1]["title"].startswith("After ELSPR") and panels[0] == before


def test_sidebar_choice_persists_across_pages(app, shipped_store):
    app.selectbox(key="judge").set_value("claude").run()
    app.selectbox(key="category").set_value("coding").run()
    for page in ("app_pages/3_cycles.py", "app_pages/4_inspector.py", "app_pages/1_leaderboard.py"):
        at = app.switch_page(page).run()
        assert_clean(at)
        assert at.selectbox(key="judge").value == "claude" and at.selectbox(key="category").value == "coding"
    pairs = _judge_pairs(shipped_store, "claude")
    coding = shipped_store.verdicts("vicuna80", judge="claude", category="coding")["prompt_id"].unique()
    graphs = pairs[pairs["prompt_id"].isin(coding)].groupby(["prompt_id", "variant", "turn"]).ngroups
    assert {m.label: m.value for m in at.metric}["Graphs"] == str(graphs)


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_the_folded_majority_tournament_is_drawn_once_opened_and_equals_the_cli(app_at, shipped_db, judge):
    """On a verdict dataset the majority tournament sits folded at the foot of Cycles: nothing of it is
    drawn (or counted) until the reader opens it; opened, its sentences and per-model table are those of
    ``diagnose --table majority`` for the same selection, a process of its own: one judge, and every judge
    pooled (six judges' votes on the same pairs)."""
    import io
    import subprocess
    import sys

    from apphelpers import REPO

    at = app_at("app_pages/3_cycles.py", dataset="vicuna80", **({"judge": judge} if judge else {}))
    assert judge_of(at) == judge
    assert_clean(at)
    n_frames = len(at.dataframe)
    texts = [unescape_md(m.value) for m in at.markdown]
    assert not any(t.startswith("Majority tournament of") for t in texts)
    at.session_state["majority_open"] = True
    at.run()
    assert_clean(at)
    assert len(at.dataframe) >= n_frames + 1
    chosen = ["--judge", judge] if judge else []
    cli = subprocess.run([sys.executable, "-m", "engine", "--db", str(shipped_db), "diagnose", "--dataset",
                          "vicuna80", *chosen, "--table", "majority", "--format", "csv"],
                         cwd=REPO, capture_output=True, text=True, check=True)
    said = [line.removeprefix("note: ") for line in cli.stderr.splitlines() if line.startswith("note: ")]
    shown = [unescape_md(m.value) for m in at.markdown]
    assert said and all(s in shown for s in said), (said, shown)
    want = pd.read_csv(io.StringIO(cli.stdout))
    table = next(f.value for f in at.dataframe if "majority_wins" in f.value.columns)
    got = table.reset_index(drop=True)[list(want.columns)]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_a_battle_log_of_one_pair_per_prompt_gets_its_majority_tournament(tmp_path, monkeypatch):
    """Every graph of an Arena-shaped log holds two models, so no cycle count applies; the page still shows
    the matrices and, open, the majority tournament (the only cycle view of such data), equal to
    ``diagnose --table majority`` as a process (it stopped before the section)."""
    import io
    import subprocess
    import sys

    import numpy as np
    from apphelpers import REPO, new_app
    from conftest import run_engine

    rng = np.random.default_rng(7)
    models = ["m0", "m1", "m2", "m3"]
    rows = ["prompt_id,model_a,model_b,winner"]
    for p in range(120):
        a, b = rng.choice(models, 2, replace=False)
        rows.append(f"q{p},{a},{b},{rng.choice(['A', 'B', 'tie'])}")
    (tmp_path / "log.csv").write_text("\n".join(rows) + "\n")
    db = tmp_path / "lens.duckdb"
    run_engine(["--db", str(db), "import", str(tmp_path / "log.csv"), "--dataset", "log"], check=True)
    at = new_app(db, monkeypatch, "app_pages/3_cycles.py", {"dataset": "log"})
    assert_clean(at)
    assert any("No graph is left to count cycles in" in i.value for i in at.info)
    cli = subprocess.run([sys.executable, "-m", "engine", "--db", str(db), "diagnose", "--dataset", "log",
                          "--table", "majority", "--format", "csv"],
                         cwd=REPO, capture_output=True, text=True, check=True)
    want = pd.read_csv(io.StringIO(cli.stdout))
    table = next(f.value for f in at.dataframe if "majority_wins" in f.value.columns)
    pd.testing.assert_frame_equal(table.reset_index(drop=True)[list(want.columns)], want, check_dtype=False)
