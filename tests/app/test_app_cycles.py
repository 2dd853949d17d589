"""Cycles and Prompt inspector pages on the shipped data, checked against brute-force counts."""

from __future__ import annotations

import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app, assert_clean, bad_triads_bruteforce, combined_outcomes, graph_digraph  # noqa: F401


def _judge_pairs(shipped_store, judge: str) -> pd.DataFrame:
    return combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))


def test_cycles_page_counts_match_bruteforce(app, shipped_store):
    at = app.switch_page("pages/3_cycles.py").run()
    assert_clean(at)
    judge = at.session_state["judge"]
    pairs = _judge_pairs(shipped_store, judge)
    per_graph = {
        key: len(bad_triads_bruteforce(graph_digraph(g)))
        for key, g in pairs.groupby(["prompt_id", "variant", "turn"])
    }
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs"] == str(len(per_graph))
    assert metrics["Bad triads in all"] == str(sum(per_graph.values()))
    share = sum(v > 0 for v in per_graph.values()) / len(per_graph)
    assert metrics["Graphs with a bad triad"] == f"{share:.0%}"
    table = at.dataframe[0].value
    worst = table.sort_values("c3_bad", ascending=False).iloc[0]
    assert worst["c3_bad"] == max(per_graph.values())


def test_cycles_table_opens_the_inspector(app):
    at = app.switch_page("pages/3_cycles.py").run()
    at.selectbox(key="cycles_pick").set_value(2).run()
    row = at.dataframe[0].value.iloc[2]
    at.button(key="cycles_open").click().run()
    assert_clean(at)
    assert at.title[0].value.endswith("Prompt inspector")
    assert at.selectbox(key="insp_prompt").value == str(row["prompt_id"])


def test_inspector_triad_shows_its_verdicts(app, shipped_store):
    at = app.switch_page("pages/4_inspector.py").run()
    assert_clean(at)
    judge = at.selectbox(key="insp_judge").value
    prompt = at.selectbox(key="insp_prompt").value
    pairs = _judge_pairs(shipped_store, judge)
    g = graph_digraph(pairs[pairs["prompt_id"] == prompt])
    expected = bad_triads_bruteforce(g)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Bad triads"] == str(len(expected))
    triads = at.dataframe[0].value
    assert {frozenset(r) for r in triads[["model_a", "model_b", "model_c"]].itertuples(index=False)} == expected

    last = len(triads) - 1
    at.selectbox(key="insp_triad").set_value(last).run()
    assert_clean(at)
    trio = set(triads.iloc[last][["model_a", "model_b", "model_c"]])
    raw = shipped_store.verdicts("vicuna80", judge=judge)
    raw = raw[(raw["prompt_id"] == prompt) & raw["model_a"].isin(trio) & raw["model_b"].isin(trio)]
    shown = [e for e in at.expander if " vs " in e.label]
    assert len(shown) == len(raw)
    labels = " ".join(e.label for e in shown)
    for m in trio:
        assert m.replace("-", "\\-").replace(".", "\\.") in labels


def test_sidebar_choice_persists_across_pages(app, shipped_store):
    app.selectbox(key="judge").set_value("claude").run()
    app.selectbox(key="category").set_value("coding").run()
    for page in ("pages/3_cycles.py", "pages/4_inspector.py", "pages/1_leaderboard.py"):
        at = app.switch_page(page).run()
        assert_clean(at)
        assert at.selectbox(key="judge").value == "claude" and at.selectbox(key="category").value == "coding"
    pairs = _judge_pairs(shipped_store, "claude")
    coding = shipped_store.verdicts("vicuna80", judge="claude", category="coding")["prompt_id"].unique()
    graphs = pairs[pairs["prompt_id"].isin(coding)].groupby(["prompt_id", "variant", "turn"]).ngroups
    assert {m.label: m.value for m in at.metric}["Graphs"] == str(graphs)
