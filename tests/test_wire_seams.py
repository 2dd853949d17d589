"""Where two parts of issue 25 meet: texts imported by ``import-texts`` as seen by the head-to-head
browser and the category filters. Each test runs both parts on data that separates the paths."""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from engine.ingest.importer import import_files
from engine.ingest.text_files import expand
from engine.ingest.texts_import import import_texts
from engine.views.head_to_head import Matchup, prompt_page, summary

MT_BENCH = REPO / "data" / "mt_bench"
MODELS = ("gpt-4", "vicuna-13b-v1.3", "llama-13b")
QUESTIONS = (81, 82, 101, 102, 111, 131)  # writing, writing, reasoning, reasoning, math, extraction


def _fastchat_pairs(path: Path) -> Path:
    """A FastChat ``gpt-4_pair.jsonl`` in its own field names: no category (MT-Bench keeps it in
    ``question.jsonl``)."""
    rng = random.Random(25)
    rows = [{"question_id": q, "model_1": a, "model_2": b, "turn": t, "tstamp": 1.0,
             "g1_winner": rng.choice(["model_1", "model_2", "tie"]),
             "g2_winner": rng.choice(["model_1", "model_2", "tie"]), "judge": ["gpt-4", "pair-v2"],
             "g1_judgment": f"g1 {q} {t}", "g2_judgment": f"g2 {q} {t}"}
            for q in QUESTIONS for t in (1, 2) for a, b in itertools.combinations(MODELS, 2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _categories() -> dict[str, str]:
    questions = pd.read_json(MT_BENCH / "question.jsonl", lines=True)
    return {str(q): c for q, c in zip(questions["question_id"], questions["category"], strict=True)}


def _mt_bench_with_texts(store, tmp_path):
    import_files(store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl")], "mtb")
    return import_texts(store, "mtb", [(p, str(p)) for p in expand([MT_BENCH])])


def test_head_to_head_shows_the_imported_answers_of_both_models(empty_store, tmp_path):
    _mt_bench_with_texts(empty_store, tmp_path)
    answers = {}
    for model in ("gpt-4", "llama-13b"):
        for line in (MT_BENCH / "model_answer" / f"{model}.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            for turn, text in enumerate(rec["choices"][0]["turns"], start=1):
                answers[(str(rec["question_id"]), turn, model)] = text
    page = prompt_page(empty_store, Matchup("mtb", "gpt-4", "llama-13b"), size=100)
    assert len(page) == len(QUESTIONS) * 2
    for p in page:
        assert (p.answer_a, p.answer_b) == (answers[(p.prompt_id, p.turn, "gpt-4")],
                                            answers[(p.prompt_id, p.turn, "llama-13b")])


def test_categories_that_come_with_the_texts_filter_head_to_head_and_leaderboard(empty_store, tmp_path):
    """Planted bug seen failing: without ``fill_verdict_categories`` the verdicts keep no category, the
    browser's category filter finds no meeting and its prompts show none."""
    _, _, result = _mt_bench_with_texts(empty_store, tmp_path)
    cats = _categories()
    verdicts = empty_store.cursor().execute(
        "SELECT prompt_id, category FROM verdicts WHERE dataset = 'mtb'").df()
    assert result is not None and result.categorised == len(verdicts)
    assert verdicts["category"].tolist() == [cats[p] for p in verdicts["prompt_id"]]
    for category in sorted({cats[str(q)] for q in QUESTIONS}):
        m = Matchup("mtb", "gpt-4", "llama-13b", category=category)
        expected = sum(1 for q in QUESTIONS if cats[str(q)] == category) * 2  # two turns each
        assert summary(empty_store, m).prompts == expected
        assert {p.category for p in prompt_page(empty_store, m, size=100)} == {category}
    again = import_texts(empty_store, "mtb", [(p, str(p)) for p in expand([MT_BENCH])])[2]
    assert again is not None and not again.changed


def test_export_says_it_leaves_out_the_kept_map_and_the_written_map_keeps_the_same_names(
        empty_store, tmp_path, db_path):
    """Planted bug seen failing: without ``map_left_out_note`` the export is silent about the kept map."""
    from conftest import run_engine

    from engine.ranking.reference import name_map_table
    from engine.store.model_maps import set_stored_map

    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl")], "mtb")
    set_stored_map(empty_store, "mtb", pd.DataFrame({"model": ["gpt-4"], "reference_model": ["gpt-4-0314"]}))
    before = name_map_table(empty_store, "mtb")
    empty_store.close()
    env = {"LENS_DB": str(db_path), "PATH": "/usr/bin:/bin"}
    done = run_engine(["datasets", "export", "mtb", str(tmp_path / "out.csv")], env=env, check=True)
    said = "model-name map kept with 'mtb' (1 model(s))"
    notes = [line for line in done.stderr.splitlines() if said in line]
    assert len(notes) == 1, done.stderr
    mapped = run_engine(["datasets", "map", "mtb", "--format", "csv"], env=env, check=True).stdout
    (tmp_path / "map.csv").write_text(mapped, encoding="utf-8")
    run_engine(["import", str(tmp_path / "out.csv"), "--dataset", "back"], env=env, check=True)
    run_engine(["datasets", "map", "back", str(tmp_path / "map.csv")], env=env, check=True)
    from engine.store.connection import Store

    with Store(db_path) as store:
        after = name_map_table(store, "back")
    named = before.dropna(subset=["rating"]).set_index("model")["reference_model"]
    assert after.dropna(subset=["rating"]).set_index("model")["reference_model"].equals(named)


def test_a_derived_judge_name_that_is_already_a_judge_of_the_dataset_is_said(empty_store, tmp_path):
    """importopts derives a judge name for rows without one; appended to a dataset that already has a judge
    of that name, the rows join its verdicts, and the import says so with the stored count. Planted bug
    seen failing: ``_note_joined_judges`` returning the report unchanged."""
    rows = [{"prompt_id": f"q{i}", "model_a": "x", "model_b": "y", "winner": "AB"[i % 2]} for i in range(5)]
    first = tmp_path / "first.json"
    first.write_text(json.dumps([dict(r, judge="human") for r in rows[:3]]), encoding="utf-8")
    import_files(empty_store, [first], "jj")
    (tmp_path / "human.json").write_text(json.dumps(rows[3:]), encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps(rows[3:][::-1]), encoding="utf-8")  # other bytes
    joined = import_files(empty_store, [tmp_path / "human.json"], "jj", derive_judge=True)
    apart = import_files(empty_store, [tmp_path / "other.json"], "jj", derive_judge=True)
    stored = dict(empty_store.cursor().execute(
        "SELECT judge, count(*) FROM verdicts WHERE dataset = 'jj' GROUP BY judge").fetchall())
    assert stored == {"human": 5, "other": 2}
    said = [n for n in joined.report.notes() if "already had" in n]
    assert said == ["Judge 'human' already had 3 verdicts in dataset 'jj'; the rows named after the file "
                    "joined them (to keep them apart: --judge NAME, or import under another dataset)."]
    assert not [n for n in apart.report.notes() if "already had" in n]


def test_an_attached_dataset_exports_its_texts_and_says_only_what_it_leaves_out(empty_store, tmp_path):
    """import-texts works on an attached dataset and its export carries the texts; the export's
    left-out count read the verdicts table, where an attached dataset has no row, so it called every
    text left out. Planted bug seen failing: ``texts_left_out`` over the verdicts table again."""
    from engine.ingest.verdict_export import export_frame, texts_left_out
    from engine.store.attached import attach

    _mt_bench_with_texts(empty_store, tmp_path)
    parquet = tmp_path / "mtb.parquet"
    empty_store.cursor().execute(
        "COPY (SELECT judge, prompt_id, turn, model_a, model_b, winner, \"order\", explanation FROM verdicts "
        f"WHERE dataset = 'mtb') TO '{parquet}' (FORMAT parquet)")
    attach(empty_store, "mtb_attached", str(parquet))
    stored = import_texts(empty_store, "mtb_attached", [(p, str(p)) for p in expand([MT_BENCH])])[2]
    assert stored is not None and stored.categorised == 0
    assert "the prompts' categories stay with the texts" in stored.summary()  # said, since filters miss them
    prompts = pd.read_json(MT_BENCH / "question.jsonl", lines=True)
    n_prompts = sum(len(t) for t in prompts["turns"])
    n_answers = sum(len(json.loads(line)["choices"][0]["turns"])
                    for f in (MT_BENCH / "model_answer").glob("*.jsonl")
                    for line in f.read_text(encoding="utf-8").splitlines())
    met = len(QUESTIONS) * 2  # prompt instances (question, turn) the verdicts name
    expected = (n_prompts - met, n_answers - met * len(MODELS))
    assert texts_left_out(empty_store, "mtb") == expected
    assert texts_left_out(empty_store, "mtb_attached") == expected
    frame = export_frame(empty_store, "mtb_attached")  # each text once, on the first verdict naming it
    carried = int(frame["answer_a"].notna().sum() + frame["answer_b"].notna().sum())
    assert (int(frame["question"].notna().sum()), carried) == (met, met * len(MODELS))


def test_compare_and_table_2_read_one_kept_map(shipped_db, tmp_path):
    """refmap's map kept with a dataset and clifix's one model set for compare and the protocols meet:
    with gpt35 kept off the reference, both rate the same 5 models and give one number. vicuna80 gpt-4
    coding with the shipped map is 4/35 over 6 models; dropping gpt35 leaves one adjacent swap among 5
    (Σd² = 2, distance (1 - rho) / 2 = 6·2 / (2·5·24) = 0.05). Planted bug seen failing: the protocols'
    reference read without the store (model_map(None, ...)) gives 6 models and 4/35."""
    import shutil

    from conftest import run_engine

    from engine.store.connection import Store
    from engine.store.model_maps import set_stored_map

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    shipped = pd.read_csv(REPO / "data" / "mappings" / "vicuna80.models.csv", dtype=str,
                          keep_default_na=False)
    kept = shipped.assign(reference_model=shipped["arena_model"].where(shipped["model"] != "gpt35", ""))
    with Store(db) as store:
        set_stored_map(store, "vicuna80", kept[["model", "reference_model"]])
    args = ["--db", str(db)]
    done = run_engine([*args, "compare", "--judge", "gpt-4", "--category", "coding", "--reference", "arena",
                       "--reference-category", "coding", "--ranker", "bt", "--format", "csv"], check=True)
    compare = pd.read_csv(io.StringIO(done.stdout)).set_index("ranker").loc["bt"]
    assert compare["n_shared"] == 5 and "gpt35" not in compare["models"].split()
    assert compare["spearman_distance"] == pytest.approx(6 * 2 / (2 * 5 * 24), abs=1e-12)
    done = run_engine([*args, "experiment", "baselines", "--reference", "arena", "--judge", "gpt-4",
                       "--protocols", "trunc", "--resamples", "2", "--format", "csv"], check=True)
    cells = pd.read_csv(io.StringIO(done.stdout))
    cell = cells[(cells["category"] == "coding") & (cells["distance"] == "spearman")]
    assert cell["mean"].iloc[0] == pytest.approx(compare["spearman_distance"], abs=1e-12)
