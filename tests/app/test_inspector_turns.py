"""The Prompt inspector on a dataset judged on a later turn only: the header names the turn (it did only when
the prompt had graphs of several turns) and the earlier questions of the conversation are shown folded above
the turn's question (the page showed the turn's question alone)."""

from __future__ import annotations

import pandas as pd
import pytest
from apphelpers import assert_clean, new_app, unescape_md

from engine.ingest.importer import import_files
from engine.ingest.shipped import open_store
from engine.judging.persist import write_answers, write_prompts


def test_a_graph_of_turn_two_names_its_turn_and_shows_the_earlier_question(tmp_path):
    db = tmp_path / "lens.duckdb"
    pairs = (("x", "y", "A"), ("y", "z", "A"), ("z", "x", "A"))  # a cycle, so the graph has a bad triad
    pd.DataFrame([{"prompt_id": "p1", "turn": 2, "model_a": a, "model_b": b, "winner": w, "judge": "j"}
                  for a, b, w in pairs]).to_csv(tmp_path / "v.csv", index=False)
    with open_store(db, ensure_default=False) as store:
        import_files(store, [tmp_path / "v.csv"], "mt")
        write_prompts(store, "mt", pd.DataFrame({"prompt_id": ["p1", "p1"], "turn": [1, 2], "category": "c",
                                                 "text": ["first question", "second question"]}))
        write_answers(store, "mt", pd.DataFrame(
            [{"prompt_id": "p1", "turn": t, "model": m, "text": f"{m}{t}"} for t in (1, 2) for m in "xyz"]))
    with pytest.MonkeyPatch.context() as mp:
        at = new_app(db, mp, "app_pages/4_inspector.py", {"dataset": "mt"})
    assert_clean(at)
    header = next(unescape_md(m.value) for m in at.markdown if m.value.startswith("**Question**"))
    assert header.endswith(", turn 2"), header
    fold = next(e for e in at.expander if e.label == "Earlier questions of this conversation")
    assert [t.value for t in fold.text] == ["first question"]
    assert "second question" in [t.value for t in at.text]
