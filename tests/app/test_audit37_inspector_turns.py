"""Audit 37: the Prompt inspector on multi-turn data (MT-Bench's two turns).

The inspector drew a (prompt, variant, judge)'s first turn only, so a turn-2 graph could not be seen, and
the Cycles page's "Open in the inspector" on a turn-2 row opened the turn-1 graph: other models' verdicts,
another bad-triad count. Here the row opened from the Cycles page and the graph the inspector then draws are
the same graph: its bad triads equal the row's count and the brute-force count over that turn's verdicts
(``bad_triads_bruteforce``), which differ from the turn-1 graph's.
"""

from __future__ import annotations

import shutil

import pandas as pd
from apphelpers import (
    assert_clean,
    bad_triads_bruteforce,
    combined_outcomes,
    graph_digraph,
    new_app,
    old_pick_labels,
)
from seam_data import Shape, verdicts


def two_turns(tmp_path, shipped_db) -> tuple:
    from engine.ingest import importer as ingest
    from engine.store.connection import Store

    rows = verdicts(Shape(seed=3, n_models=6, n_prompts=4, turns=2, tie_p=0.3))
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    store = Store(db)
    report = ingest.validate_file(rows.to_csv(index=False).encode(), "turns.csv", dataset="turns")
    assert ingest.store_report(store, report, "turns").status == "stored"
    v = store.verdicts("turns")
    store.close()
    return db, v


def brute(v: pd.DataFrame, prompt: str, turn: int) -> int:
    """Bad triads of one graph (variant 0, the only judge) from its verdicts, by enumeration."""
    g = combined_outcomes(v[(v["prompt_id"].astype(str) == prompt) & (v["turn"] == turn)])
    return len(bad_triads_bruteforce(graph_digraph(g)))


def test_cycles_opens_the_turn_it_lists_and_the_inspector_draws_it(shipped_db, tmp_path, monkeypatch):
    db, v = two_turns(tmp_path, shipped_db)
    at = new_app(db, monkeypatch, "app_pages/3_cycles.py", {"dataset": "turns"})
    assert_clean(at)
    [table] = [d.value.reset_index(drop=True) for d in at.dataframe if "s_mu" in d.value.columns]  # by S_μ
    # a turn-2 row whose turn-1 graph holds another number of bad triads: the two paths differ on it
    pick = next(i for i, r in table.iterrows() if r["turn"] == 2
                and brute(v, str(r["prompt_id"]), 1) != brute(v, str(r["prompt_id"]), 2))
    row = table.iloc[pick]
    assert row["c3_bad"] == brute(v, str(row["prompt_id"]), 2)
    # the picker's options name each row's turn, as the old per-option path wrote them (test_app_cycles.py)
    options = at.selectbox(key="cycles_pick").options
    assert options == old_pick_labels(table, 1.0) and options[pick].split(" · ")[2] == "turn 2"
    assert row["link"].endswith("&turn=2")  # the table's own link opens the same graph
    at.selectbox(key="cycles_pick").set_value(pick).run()
    at.button(key="cycles_open").click().run()
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Bad triads"] == str(row["c3_bad"])
    assert any(f"prompt {row['prompt_id']}, original, turn 2" in m.value for m in at.markdown)


def test_a_link_names_its_turn_and_the_turn_control_switches_graphs(shipped_db, tmp_path, monkeypatch):
    db, v = two_turns(tmp_path, shipped_db)
    prompt = next(p for p in v["prompt_id"].astype(str).unique() if brute(v, p, 1) != brute(v, p, 2))
    judge = str(v["judge"].iloc[0])
    at = new_app(db, monkeypatch, "app_pages/4_inspector.py",
                 {"dataset": "turns", "judge": judge, "prompt_id": prompt, "variant": "0", "turn": "2"})
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Bad triads"] == str(brute(v, prompt, 2))
    at.segmented_control(key="insp_turn").set_value(1).run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Bad triads"] == str(brute(v, prompt, 1))
    assert any(f"prompt {prompt}, original, turn 1" in m.value for m in at.markdown)
