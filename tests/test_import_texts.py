"""``import-texts``: prompt and answer texts from their own files, matched to a dataset's verdicts.

Every count a report gives is checked against a second path: the files read again with ``json`` and
matched against the verdict keys in plain Python. The verdict files are written here, in each tool's
field names (FastChat pairwise, LLMFAO comparisons, AlpacaEval annotations); the MT-Bench questions and
answers are the shipped data/mt_bench.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from conftest import REPO, run_engine

from engine.errors import LensError
from engine.ingest.formats._common import text_id
from engine.ingest.importer import import_files
from engine.ingest.text_files import expand, read_text_files
from engine.ingest.texts_import import import_texts

MT_BENCH = REPO / "data" / "mt_bench"
MTB_MODELS = ("gpt-4", "vicuna-13b-v1.3", "llama-13b", "not-in-folder")


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _fastchat_pairs(path: Path, questions=(81, 82, 95, 131), turns=(1, 2)) -> Path:
    """A FastChat ``gpt-4_pair.jsonl`` in its own field names, over MTB_MODELS (one has no answer file)."""
    rng = random.Random(3)
    return _jsonl(path, [
        {"question_id": q, "model_1": a, "model_2": b, "g1_winner": rng.choice(["model_1", "model_2", "tie"]),
         "g2_winner": rng.choice(["model_1", "model_2", "tie"]), "judge": ["gpt-4", "pair-v2"],
         "g1_judgment": "[[A]]", "g2_judgment": "[[B]]", "turn": t, "tstamp": 1.0}
        for q in questions for t in turns for a, b in itertools.combinations(MTB_MODELS, 2)])


def _sources(paths) -> list:
    return [(p, str(p)) for p in expand(paths)]


def _version(store, dataset: str) -> int:
    return store.dataset_version(dataset)


def test_mt_bench_folder_counts_match_a_brute_force_join(empty_store, tmp_path):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl")], "mtb")
    before = _version(empty_store, "mtb")
    read, match, result = import_texts(empty_store, "mtb", _sources([MT_BENCH]))

    # the second path: the files read with json, the verdict keys from the store, joined in Python
    questions = [json.loads(line) for line in (MT_BENCH / "question.jsonl").open()]
    file_prompts = {(str(q["question_id"]), t): text
                    for q in questions for t, text in enumerate(q["turns"], 1)}
    file_answers = {}
    for f in sorted((MT_BENCH / "model_answer").glob("*.jsonl")):
        for line in f.open():
            a = json.loads(line)
            for t, text in enumerate(a["choices"][0]["turns"], 1):
                file_answers.setdefault((str(a["question_id"]), t, f.stem), text)
    v = empty_store.verdicts("mtb")
    verdict_prompts = {(p, int(t)) for p, t in zip(v["prompt_id"], v["turn"], strict=True)}
    verdict_answers = {(p, int(t), m) for side in ("model_a", "model_b")
                       for p, t, m in zip(v["prompt_id"], v["turn"], v[side], strict=True)}

    assert (match.prompts, match.answers) == (len(file_prompts), len(file_answers)) == (160, 960)
    assert match.prompts_matched == len(verdict_prompts & file_prompts.keys()) == 8
    assert match.answers_matched == len(verdict_answers & file_answers.keys()) == 24
    assert match.verdict_answers == len(verdict_answers) and match.verdict_answers_with_text == 24
    verdict_models = {m for *_, m in verdict_answers}
    assert match.unknown_models == tuple(sorted({m for *_, m in file_answers} - verdict_models))
    assert match.unknown_models == ("alpaca-13b", "claude-v1", "gpt-3.5-turbo") and match.repeats == 0
    missing = sorted(k for k in file_answers.keys() - verdict_answers if k[2] in verdict_models)
    assert match.unmatched_answers == tuple(f"{m} on {p}" + (f" turn {t}" if t != 1 else "")
                                            for p, t, m in missing[:5])
    assert result is not None and result.changed and _version(empty_store, "mtb") > before
    # what is stored is what the files hold, key by key (vicuna-13b-v1.3 by its file's name)
    stored = empty_store.answer_texts("mtb")
    assert {(r.prompt_id, r.turn, r.model): r.text for r in stored.itertuples()} == file_answers
    prompts = empty_store.prompt_texts("mtb")
    assert {(r.prompt_id, r.turn): r.text for r in prompts.itertuples()} == file_prompts
    assert any("vicuna-13b-hao-0515" in n for n in read.notes())


def test_reimport_replaces_a_key_and_identical_texts_take_no_version(empty_store, tmp_path):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl", questions=(81,), turns=(1,))],
                 "mtb")
    first = _jsonl(tmp_path / "a1.jsonl", [{"prompt_id": "81", "model": "gpt-4", "text": "old"},
                                          {"prompt_id": "81", "model": "llama-13b", "text": "kept"}])
    import_texts(empty_store, "mtb", _sources([first]))
    v1 = _version(empty_store, "mtb")
    second = _jsonl(tmp_path / "a2.jsonl", [{"prompt_id": "81", "model": "gpt-4", "text": "new"}])
    *_, result = import_texts(empty_store, "mtb", _sources([second]))
    v2 = _version(empty_store, "mtb")
    assert result is not None and result.changed and v2 > v1
    texts = dict(zip(empty_store.answer_texts("mtb")["model"], empty_store.answer_texts("mtb")["text"],
                     strict=True))
    assert texts == {"gpt-4": "new", "llama-13b": "kept"}
    *_, again = import_texts(empty_store, "mtb", _sources([second]))
    assert again is not None and not again.changed and _version(empty_store, "mtb") == v2


def test_a_prompt_keeps_its_category_when_the_file_gives_none(empty_store, tmp_path):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl", questions=(81,), turns=(1,))],
                 "mtb")
    import_texts(empty_store, "mtb", _sources([_jsonl(tmp_path / "p1.jsonl", [
        {"prompt_id": "81", "text": "first", "category": "writing"}])]))
    import_texts(empty_store, "mtb", _sources([_jsonl(tmp_path / "p2.jsonl", [
        {"prompt_id": "81", "text": "second"}])]))
    row = empty_store.prompt_texts("mtb").iloc[0]
    assert (row["text"], row["category"]) == ("second", "writing")


def test_a_record_without_text_refuses_the_whole_import(empty_store, tmp_path):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl")], "mtb")
    good = (MT_BENCH / "model_answer" / "gpt-4.jsonl").read_text().splitlines()
    bad = tmp_path / "model_answer"
    bad.mkdir()
    rec = json.loads(good[2])
    del rec["choices"][0]["turns"]
    (bad / "llama-13b.jsonl").write_text("\n".join([*good[:2], json.dumps(rec), *good[3:]]) + "\n")
    before = _version(empty_store, "mtb")
    with pytest.raises(LensError, match=r"^llama-13b.jsonl line 3: its choices\[0\].turns is not a non-empty "
                                        r"list; nothing was stored\.$"):
        import_texts(empty_store, "mtb", _sources([MT_BENCH / "question.jsonl", bad / "llama-13b.jsonl"]))
    assert empty_store.prompt_texts("mtb").empty and empty_store.answer_texts("mtb").empty
    assert _version(empty_store, "mtb") == before
    done = run_engine(["--db", empty_store.path, "import-texts", "--dataset", "mtb", str(bad)])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "line 3" in done.stderr


def test_texts_of_another_dataset_are_refused(empty_store, tmp_path):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl")], "mtb")
    other = _jsonl(tmp_path / "q.jsonl", [{"question_id": f"q{i}", "turns": ["x"]} for i in range(3)])
    with pytest.raises(LensError, match="Not one text of the files matches a verdict of dataset 'mtb'"):
        import_texts(empty_store, "mtb", _sources([other]))
    assert empty_store.prompt_texts("mtb").empty


def test_repeated_keys_keep_the_last_text_across_batches(empty_store, tmp_path, monkeypatch):
    import_files(empty_store, [_fastchat_pairs(tmp_path / "gpt-4_pair.jsonl", questions=(81,), turns=(1,))],
                 "mtb")
    rows = [{"prompt_id": "81", "model": m, "text": f"{m} #{k}"} for k in range(3) for m in MTB_MODELS[:3]]
    path = _jsonl(tmp_path / "answers.jsonl", [rows[4], *rows])  # the same text again is no conflict
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "2")  # five batches: the last text must still win
    _, match, _ = import_texts(empty_store, "mtb", _sources([path]))
    assert match.repeats == 6 and match.answers == 3
    stored = empty_store.answer_texts("mtb")
    assert dict(zip(stored["model"], stored["text"], strict=True)) == {m: f"{m} #2" for m in MTB_MODELS[:3]}


def test_llmfao_results_name_models_through_models_jsonl(empty_store, tmp_path):
    """LLMFAO's comparison files name models by name and prompts by number; results.jsonl may give only the
    model's number, which models.jsonl names (it is read first whatever the order given)."""
    names = {97: "Airoboros L2 70B", 29: "Alpaca (7B)", 81: "GPT 3.5 Turbo"}
    (tmp_path / "c.csv").write_text("id,prompt,model_x,model_y,winner,left,right\n"
                                    "0,8,97,29,left,Airoboros L2 70B,Alpaca (7B)\n"
                                    "1,5,29,81,right,Alpaca (7B),GPT 3.5 Turbo\n")
    import_files(empty_store, [tmp_path / "c.csv"], "llmfao")
    prompts = _jsonl(tmp_path / "prompts.jsonl", [
        {"id": 8, "text": "Argue about kubernetes.", "type": "reflexion", "slug": "k8s", "stop": None},
        {"id": 5, "text": "Explain fields.", "type": "knowledge", "slug": "qft", "stop": None}])
    results = _jsonl(tmp_path / "results.jsonl", [
        {"id": k, "model": m, "result": f"answer of {m} to {p}", "prompt": p, "duration": 1.0}
        for k, (m, p) in enumerate(itertools.product(names, (8, 5)))])
    models = _jsonl(tmp_path / "models.jsonl", [{"id": m, "api_id": f"x/{m}", "name": n, "api": "together"}
                                                for m, n in names.items()])
    read, match, _ = import_texts(empty_store, "llmfao", _sources([prompts, results, models]))
    assert [f.shape for f in read.files] == ["llmfao-prompts", "llmfao-results", "llmfao-models"]
    stored = empty_store.answer_texts("llmfao")
    assert set(zip(stored["prompt_id"], stored["model"], strict=True)) == {
        (str(p), n) for n in names.values() for p in (8, 5)}
    assert stored.set_index(["prompt_id", "model"]).loc[("8", "Alpaca (7B)"), "text"] == "answer of 29 to 8"
    assert (match.answers_matched, match.prompts_matched) == (4, 2)  # the four (prompt, model) sides met
    assert empty_store.prompt_texts("llmfao").set_index("prompt_id").loc["5", "category"] == "knowledge"
    with pytest.raises(LensError, match=r"results.jsonl line 1: its model 97 has no name here"):
        import_texts(empty_store, "llmfao", _sources([results]))


def test_alpaca_outputs_meet_annotations_by_instruction(empty_store, tmp_path):
    instructions = ["Write a haiku.", "Name three colours.", "What is 2 + 2?"]
    annotations = [{"instruction": i, "output_1": None, "generator_1": "gpt4", "output_2": None,
                    "generator_2": "alpaca-7b", "annotator": "gpt4_ann", "preference": 1 + k % 2}
                   for k, i in enumerate(instructions)]
    (tmp_path / "annotations.json").write_text(json.dumps(annotations))
    import_files(empty_store, [tmp_path / "annotations.json"], "ae")
    outputs = tmp_path / "gpt4_outputs.json"
    outputs.write_text(json.dumps([{"instruction": i, "output": f"gpt4 says {k}", "generator": "gpt4",
                                    "dataset": "helpful_base"} for k, i in enumerate(instructions)]))
    read, match, _ = import_texts(empty_store, "ae", _sources([outputs]))
    verdict_ids = set(empty_store.verdicts("ae")["prompt_id"])
    assert verdict_ids == {text_id(i) for i in instructions}
    stored = empty_store.answer_texts("ae")
    assert set(stored["prompt_id"]) == verdict_ids and set(stored["model"]) == {"gpt4"}
    assert match.answers_matched == 3 and match.verdict_answers_with_text == 3 and match.verdict_answers == 6
    assert any("instruction text" in n for n in read.notes())


def _styled(model: str, prompt: int) -> str:
    """An answer whose markdown and length vary by model and prompt (so the style features vary)."""
    rng = random.Random(f"{model}-{prompt}")
    parts = ["# Title\n" * rng.randint(0, 2), "- item\n" * rng.randint(0, 4), "**bold** " * rng.randint(0, 3),
             "word " * rng.randint(5, 60)]
    return "".join(parts)


def test_style_control_counts_imported_texts_as_it_counts_texts_in_the_verdicts(empty_store, tmp_path):
    """Two datasets, one verdict file: one with answers inside the verdicts, one without, then
    import-texts. Before, style control on the second refuses; after, its board equals the first's."""
    models = ["m1", "m2", "m3", "m4"]
    rng = random.Random(7)
    rows = []
    for p in range(24):
        for a, b in itertools.combinations(models, 2):
            la, lb = len(_styled(a, p)), len(_styled(b, p))
            winner = "A" if rng.random() < la / (la + lb) else "B"
            rows.append({"prompt_id": str(p), "model_a": a, "model_b": b, "winner": winner,
                         "question": f"question {p}", "answer_a": _styled(a, p), "answer_b": _styled(b, p)})
    _jsonl(tmp_path / "with.jsonl", rows)
    _jsonl(tmp_path / "bare.jsonl", [{k: r[k] for k in ("prompt_id", "model_a", "model_b", "winner")}
                                     for r in rows])
    import_files(empty_store, [tmp_path / "with.jsonl"], "embedded")
    import_files(empty_store, [tmp_path / "bare.jsonl"], "apart")
    board = ["--db", empty_store.path, "leaderboard", "--style-control", "--format", "csv", "--dataset"]
    refused = run_engine([*board, "apart"])
    assert refused.returncode == 2 and "no answer text" in refused.stderr
    for half in (range(12), range(12, 24)):  # the board between the halves counts the first half's texts
        answers = _jsonl(tmp_path / f"answers{half[0]}.jsonl", [
            {"prompt_id": str(p), "model": m, "text": _styled(m, p)} for p in half for m in models])
        _, match, _ = import_texts(empty_store, "apart", _sources([answers]))
        assert match.answers_matched == match.answers == 48
        partial = run_engine([*board, "apart"], check=True)
    expected = run_engine([*board, "embedded"], check=True)
    assert partial.stdout == expected.stdout and partial.stdout.count("\n") == 5


def test_one_batch_and_many_batches_stage_the_same_rows(tmp_path, monkeypatch):
    files = _sources([MT_BENCH])
    whole = read_text_files(files)
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "7")
    parts = read_text_files(files)
    import duckdb

    for kind in ("prompts_file", "answers_file"):
        a, b = (duckdb.sql(f"SELECT * EXCLUDE (seq) FROM read_parquet('{getattr(r, kind)}') "
                           "ORDER BY seq").df() for r in (whole, parts))
        assert a.equals(b) and len(a) in (160, 960)


@pytest.mark.parametrize("layout", ["v0.1 as first published", "since the 2025 rewrite"])
def test_arena_hard_questions_and_answers_in_both_layouts(empty_store, tmp_path, layout):
    """Arena-Hard judgments name a question by ``uid`` (or ``question_id``); its answer files first had
    FastChat's layout with turns as objects, then ``uid, messages`` with the answer in ``content.answer``."""
    uids = ["aa11", "bb22", "cc33"]
    (tmp_path / "j.jsonl").write_text("".join(json.dumps(
        {"uid": u, "category": "arena-hard-v0.1", "judge": "gpt-4-1106-preview", "model": "m-new",
         "games": [{"score": "A>B"}, {"score": "A=B"}]}) + "\n" for u in uids[:2]))
    import_files(empty_store, [tmp_path / "j.jsonl"], "ah", baseline_model="gpt-4-0314")
    answers = tmp_path / "model_answer"
    answers.mkdir()
    for model in ("m-new", "gpt-4-0314"):
        if layout.startswith("v0.1"):
            rows = [{"question_id": u, "answer_id": "x", "model_id": model,
                     "choices": [{"index": 0, "turns": [{"content": f"{model}: {u}", "token_len": 3}]}]}
                    for u in uids]
        else:
            rows = [{"uid": u, "ans_id": "x", "model": model, "messages": [
                {"role": "user", "content": f"question {u}"},
                {"role": "assistant", "content": {"answer": f"{model}: {u}"}}]} for u in uids]
        _jsonl(answers / f"{model}.jsonl", rows)
    questions = ([{"question_id": u, "category": "arena-hard-v0.1", "turns": [{"content": f"question {u}"}]}
                  for u in uids] if layout.startswith("v0.1") else
                 [{"uid": u, "category": "arena-hard-v0.1", "cluster": "c", "prompt": f"question {u}"}
                  for u in uids])
    _jsonl(tmp_path / "question.jsonl", questions)
    _, match, _ = import_texts(empty_store, "ah", _sources([tmp_path]))
    assert (match.prompts_matched, match.prompts, match.answers_matched, match.answers) == (2, 3, 4, 6)
    stored = empty_store.answer_texts("ah")
    assert sorted(stored["text"]) == sorted(f"{m}: {u}" for m in ("m-new", "gpt-4-0314") for u in uids)
    assert dict(zip(*empty_store.prompt_texts("ah")[["prompt_id", "text"]].T.values, strict=True)) == {
        u: f"question {u}" for u in uids}
