"""The Data page's notes (issue 23 follow-up): a dataset an unfinished judge run left part-written is
flagged where the page lists it (pages 1-5 flag the sidebar's dataset; the Data page lists every
dataset), and an export that cannot carry some texts says how many by its download button, as
``datasets export`` does on stderr.

Before: the Data page listed an incomplete dataset without a word (the note was on pages 1-5 only)
and offered its download without saying that 1 prompt text and 2 answer texts were not in the file.
The run record is the one ``calls --runs`` leaves after a kill (status ``interrupted``); the texts are
the kinds a judge run stores and no verdict names. Expected sentences are written out from those
rows, not taken from the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from apphelpers import assert_clean, new_app, unescape_md

from engine.ingest.importer import import_files
from engine.store import writes
from engine.store.connection import Store

ROW = {"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A", "question": "Q?",
       "answer_a": "x", "answer_b": "y"}
INCOMPLETE = ("Dataset 'k' is incomplete: judge run 7 (openai model 'fake-judge', protocol swapped) was "
              "interrupted or killed before it finished (2 calls stored), so results over it cover only "
              "what that run wrote; rerun the same command to complete it (stored calls are not paid "
              "again).")


def _store(db: Path, tmp_path: Path, *, left_out: bool, status: str = "interrupted") -> None:
    """Datasets ``k`` (a judge run of it in ``status``, 2 calls stored) and ``ok``; with ``left_out``,
    ``k`` also holds a prompt text no verdict names, an answer of a model in no verdict and a blank
    answer (texts an export cannot carry)."""
    src = tmp_path / "v.jsonl"
    src.write_text(json.dumps(ROW) + "\n")
    store = Store(db)
    try:
        for name in ("k", "ok"):
            import_files(store, [src], name)
        with store.transaction() as tx:
            tx.execute(
                "INSERT INTO judge_runs (run_id, kind, dataset, backend, model, protocol, params, status)"
                " VALUES (7, 'judge', 'k', 'openai', 'fake-judge', 'swapped', '{}', ?)", [status])
            for i in range(2):
                tx.execute(
                    "INSERT INTO judge_calls (call_key, backend, model, template_id, template_version,"
                    " messages, decoding, run_id) VALUES (?, 'openai', 'fake-judge', 't', 1, '[]', '{}', 7)",
                    [f"c{i}"])
            if left_out:
                writes.upsert_prompts(tx, "k", pd.DataFrame({
                    "prompt_id": ["q"], "variant": [0], "turn": [1], "category": [None],
                    "variant_kind": ["original"], "parent_variant": [None], "text": ["Q2"]}))
                writes.upsert_answers(tx, "k", pd.DataFrame({
                    "prompt_id": ["p", "p"], "variant": [0, 0], "turn": [1, 1], "model": ["c", "a"],
                    "text": ["z", "  "]}))
    finally:
        store.close()


def _warnings(at) -> list[str]:
    return [unescape_md(w.value) for w in at.warning if "is incomplete" in w.value]


def _export(at, pick: str):
    at.get("button_group")[0].set_value("Export").run()
    at = at.selectbox(key="export_pick").set_value(pick).run()
    assert_clean(at)
    return at


def test_the_data_page_flags_an_incomplete_dataset_once_in_every_section(tmp_path, monkeypatch):
    db = tmp_path / "lens.duckdb"
    _store(db, tmp_path, left_out=False)
    at = new_app(db, monkeypatch, "app_pages/6_data.py", {"dataset": "k"})
    assert_clean(at)
    assert _warnings(at) == [INCOMPLETE]  # old: []
    at.get("button_group")[0].set_value("Rename / delete").run()
    assert _warnings(at) == [INCOMPLETE]
    at = _export(at, "ok")  # the results part names the sidebar's k: still one warning, not two
    assert _warnings(at) == [INCOMPLETE]


@pytest.mark.parametrize("status", ["done", "failed-calls"])
def test_a_finished_run_leaves_no_warning_on_the_data_page(tmp_path, monkeypatch, status):
    db = tmp_path / "lens.duckdb"
    _store(db, tmp_path, left_out=False, status=status)
    at = new_app(db, monkeypatch, "app_pages/6_data.py")
    assert_clean(at)
    assert _warnings(at) == []
    assert _warnings(_export(at, "k")) == []


def test_the_export_download_says_which_texts_are_left_out(tmp_path, monkeypatch):
    db = tmp_path / "lens.duckdb"
    _store(db, tmp_path, left_out=True)
    at = new_app(db, monkeypatch, "app_pages/6_data.py")
    at = _export(at, "k")
    infos = [unescape_md(i.value) for i in at.info if "are not in the file" in i.value]
    assert infos == ["1 prompt text(s) and 2 answer text(s) of 'k' are not in the file: no verdict names "
                     "their prompt (and model), or the text is blank."]  # old: []
    at = _export(at, "ok")  # every text of ok is in its file: no note
    assert [i.value for i in at.info if "are not in the file" in i.value] == []
