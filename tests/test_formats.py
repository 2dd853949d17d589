"""Readers of the field's judgment files (engine/ingest/formats): small fixtures written in each tool's own
field names (tests/fixtures/formats, content invented), detection from the content, ``--format``
overrides, value maps, per-file judges, repeated votes, dropped columns, and a generated
Arena-shaped log with repeated battles."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.errors import LensError
from engine.ingest.formats import detect_tool
from engine.ingest.formats.alpaca_eval import hard_winner
from engine.ingest.importer import import_files, store_report, validate_file, validate_paths
from engine.ingest.verdicts import validate_bytes

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"


def rows(rep) -> list[dict]:
    g = rep.good
    return g.astype(object).where(g.notna(), None).to_dict("records")


def test_fastchat_pairwise_two_games_per_record():
    rep = validate_file(FIX / "gpt-4_pair.jsonl", dataset="d")
    assert rep.format == "fastchat-pair" and rep.n_rejected == 0 and rep.rows_read == 6
    got = [(r["prompt_id"], r["model_a"], r["model_b"], r["order"], r["winner"], r["judge"], r["turn"])
           for r in rows(rep)]
    # g1 shows model_1 first (order AB), g2 shows model_2 first (order BA); winners name model_1/model_2
    assert got == [
        ("81", "alpha", "beta", "AB", "A", "gpt-4", 1), ("81", "alpha", "beta", "BA", "A", "gpt-4", 1),
        ("81", "alpha", "gamma", "AB", "tie", "gpt-4", 1), ("81", "alpha", "gamma", "BA", "B", "gpt-4", 1),
        ("82", "beta", "gamma", "AB", "invalid", "gpt-4", 2), ("82", "beta", "gamma", "BA", "B", "gpt-4", 2),
    ]
    r = rows(rep)
    assert [x["explanation"] for x in r[:2]] == ["A is better. [[A]]", "B is better. [[B]]"]
    assert [x["tstamp"] for x in r] == [1700000000.5] * 2 + [1700000001.0] * 2 + [1700000002.0] * 2
    assert [x["source_line"] for x in r] == [1, 1, 2, 2, 3, 3]
    assert rep.n_invalid == 1  # error stored as invalid, never a tie
    assert rep.dropped == {str(FIX / "gpt-4_pair.jsonl"): ("g1_user_prompt", "g2_user_prompt")}


def test_mtbench_human_judgments_keep_conversations():
    rep = validate_file(FIX / "human_judgments.jsonl", dataset="d")
    assert rep.format == "mtbench-human" and rep.n_rejected == 0
    got = [
        (r["model_a"], r["model_b"], r["winner"], r["judge"], r["annotator"], r["turn"]) for r in rows(rep)
    ]
    assert got == [
        ("alpha", "beta", "A", "human", "expert_3", 1),
        ("alpha", "beta", "tie", "human", "author_1", 2),
        ("beta", "alpha", "B", "gpt4_pair", None, 1),
    ]
    prompts = rep.prompts.sort_values("turn")[["prompt_id", "turn", "text"]].values.tolist()
    assert prompts == [["81", 1, "Q1 text"], ["81", 2, "Q2 text"]]
    answers = {(a, t): x for a, t, x in rep.answers[["model", "turn", "text"]].values.tolist()}
    assert answers == {("alpha", 1): "alpha one", ("beta", 1): "beta one", ("alpha", 2): "alpha two",
                       ("beta", 2): "beta two"}


def test_arena_hard_games_strength_and_null_score():
    rep = validate_file(FIX / "alpha.jsonl", dataset="d")
    assert rep.format == "arena-hard" and rep.n_rejected == 0
    got = [(r["prompt_id"], r["model_a"], r["model_b"], r["order"], r["winner"], r["strength"], r["judge"])
           for r in rows(rep)]
    # game 1 shows the baseline as A (so model_a = the model is shown second: BA); game 2 the model as A
    assert got == [
        ("q1", "alpha", "base", "BA", "B", 2, "gpt-4.1"),
        ("q1", "alpha", "base", "AB", "B", 1, "gpt-4.1"),
        ("q2", "alpha", "base", "BA", "A", 2, "gpt-4.1"),
        ("q2", "alpha", "base", "AB", "invalid", None, "gpt-4.1"),
        ("q3", "alpha", "base", "BA", "tie", None, "gpt-4.1"),
        ("q3", "alpha", "base", "AB", "A", 1, "gpt-4.1"),
    ]
    assert rows(rep)[0]["explanation"] == "base much better [[A>>B]]"
    assert all(r["prob_a"] is None for r in rows(rep))  # a strength never becomes a soft preference


def test_arena_hard_bad_records_are_rejected_with_a_reason():
    recs = [
        {"uid": "q1", "judge": "j", "model": "m", "games": [{"score": "A>B"}, {"score": "B>A"}]},
        {
            "uid": "q2",
            "judge": "j",
            "model": "m",
            "baseline": "b",
            "games": [{"score": "A>>>B"}, {"score": "A>B"}],
        },
    ]
    rep = validate_bytes("\n".join(json.dumps(r) for r in recs).encode(), "h.jsonl", dataset="d")
    assert rep.rows_read == rep.n_good + rep.n_rejected
    reasons = dict(zip(rep.rejected["source_line"], rep.rejected["reason"], strict=True))
    assert "no baseline field" in reasons[1]
    assert reasons[2] == ("game 1 score 'A>>>B' is not one of A>>B, A>B, A=B, B>A, B>>A (or A<<B, A<B, B<A, "
                          "B<<A) or null")
    assert rep.good[["prompt_id", "winner"]].values.tolist() == [["q2", "A"]]


def test_alpaca_eval_soft_preference_beside_hard_winner():
    rep = validate_file(FIX / "annotations.json", dataset="d")
    assert rep.format == "alpaca-eval" and rep.n_rejected == 0
    src = json.loads((FIX / "annotations.json").read_text())
    for rec, r in zip(src, rows(rep), strict=True):
        assert (r["model_a"], r["model_b"]) == (rec["generator_1"], rec["generator_2"])
        assert r["judge"] == rec["annotator"] and r["category"] == rec["dataset"]
        assert r["order"] is None
        p = rec["preference"]
        if p is None:
            assert r["winner"] == "invalid" and r["prob_a"] is None
        else:
            assert math.isclose(r["prob_a"], 2 - p)
            assert r["winner"] == {1.0: "A", 2.0: "B", 1.5: "tie"}.get(float(p), "B")  # 1.73 → B
    # the same instruction gives the same prompt id; its text and both outputs are kept
    ids = rep.good["prompt_id"].tolist()
    assert ids[0] == ids[1] != ids[2] == ids[3] == ids[4]
    assert set(rep.prompts["text"]) == {"Name a colour.", "Add 2 and 2."}
    assert {"price_per_example", "time_per_example"} <= set(next(iter(rep.dropped.values())))
    assert [hard_winner(p) for p in (1.0, 1.49, 1.5, 1.51, 2.0)] == ["A", "A", "tie", "B", "B"]


def test_llmfao_left_right_rows():
    rep = validate_file(FIX / "llmfao-comparisons.csv", dataset="d")
    assert rep.format == "evalica" and rep.n_rejected == 0
    got = [(r["battle_id"], r["prompt_id"], r["model_a"], r["model_b"], r["winner"]) for r in rows(rep)]
    assert got == [("0", "8", "Alpha 7B", "Beta (13B)", "A"), ("1", "8", "Beta (13B)", "Gamma", "B"),
                   ("2", "5", "Gamma", "Alpha 7B", "tie"), ("3", "5", "Gamma", "Alpha 7B", "tie")]
    assert rep.repeats == 0  # rows 2 and 3 differ by their id
    assert rep.notes() == ["Read as evalica / LLMFAO left-right comparisons (--format evalica).",
                           "llmfao-comparisons.csv: columns not kept (not verdict fields): model_x, model_y."]


def test_field_names_in_any_case():
    rep = validate_bytes(b"ID,Prompt,Left,Right,Winner\n7,p,x,y,Right\n8,p,x,y,X\n9,p,x,y,Draw\n", "c.csv",
                         dataset="d")
    assert rep.format == "evalica"
    assert rep.good[["battle_id", "prompt_id", "model_a", "model_b", "winner"]].values.tolist() == [
        ["7", "p", "x", "y", "B"], ["8", "p", "x", "y", "A"], ["9", "p", "x", "y", "tie"]]


def test_arena_log_keeps_time_voter_and_texts():
    rep = validate_file(FIX / "arena_conversations.jsonl", dataset="d")
    assert rep.format == "arena" and rep.n_rejected == 0
    got = [(r["prompt_id"], r["winner"], r["judge"], r["annotator"], r["tstamp"]) for r in rows(rep)]
    assert got == [("c0ffee01", "A", "human", "arena_user_1", 1682351591.1),
                   ("c0ffee02", "tie", "human", "arena_user_2", 1682351600.0)]
    assert set(rep.answers["text"]) == {"hello from alpha", "hello from beta", "5", "22"}
    assert rep.dropped[str(FIX / "arena_conversations.jsonl")] == ("anony", "language")


def test_format_override_and_detection():
    data = (FIX / "llmfao-comparisons.csv").read_bytes()
    assert validate_bytes(data, "x.csv", dataset="d", fmt="evalica").format == "evalica"
    # a container name reads canonical columns only: no model_a column, so the file is refused
    with pytest.raises(LensError, match="has no prompt_id / model_a / model_b column"):
        validate_bytes(data, "x.csv", dataset="d", fmt="csv")
    assert (
        detect_tool([{"raw_text": "x"}, {"prompt_id": 1, "model_a": "x", "model_b": "y", "winner": "A"}])
        is None
    )
    # a canonical file with a time stamp stays a canonical file (no Arena-only field)
    rep = validate_bytes(
        b"prompt_id,model_a,model_b,winner,judge,timestamp\np,x,y,A,j,2024-05-01T00:00:00Z\n",
        "v.csv",
        dataset="d",
    )
    assert rep.format == "csv" and rep.good["judge"].tolist() == ["j"]
    assert rep.good["tstamp"].tolist() == [pd.Timestamp("2024-05-01", tz="UTC").timestamp()]


def test_bad_time_is_one_sentence():
    rep = validate_bytes(
        b"prompt_id,model_a,model_b,winner,tstamp\np,x,y,A,yesterday\n", "v.csv", dataset="d"
    )
    assert rep.sentences() == ["v.csv line 2: tstamp 'yesterday' is not a time "
                               "(seconds since 1970, or a date such as 2024-05-01T12:00:00Z)."]


def test_value_map_for_any_spelling():
    text = b"prompt_id,model_a,model_b,winner\np,x,y,first\np,x,y,Second\np,x,y,same\n"
    rep = validate_bytes(text, "v.csv", dataset="d",
                         value_map={"winner": {"first": "A", "second": "B", "same": "tie"}})
    assert rep.good["winner"].tolist() == ["A", "B", "tie"]
    unmapped = validate_bytes(text, "v.csv", dataset="d")
    assert unmapped.n_rejected == 3


def make_arena_log(seed: int, n: int = 400) -> tuple[list[dict], pd.DataFrame]:
    """A generated Arena-shaped battle log in which some battles repeat another exactly except for
    their ``num`` (the published files hold such pairs)."""
    rng = np.random.default_rng(seed)
    models = ["m1", "m2", "m3", "m4"]
    recs = []
    for i in range(n):
        if recs and rng.random() < 0.1:
            rec = dict(recs[int(rng.integers(len(recs)))])  # the same battle content again
        else:
            a, b = rng.choice(4, size=2, replace=False)
            rec = {"model_a": models[a], "model_b": models[b],
                   "winner": str(rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"])),
                   "judge": f"arena_user_{int(rng.integers(0, 30))}", "turn": 1, "anony": True,
                   "language": "English", "tstamp": 1.7e9 + float(i)}
        rec["num"] = i
        recs.append(rec)
    return recs, pd.DataFrame(recs)


def test_generated_arena_log_keeps_every_battle(empty_store, tmp_path):
    recs, df = make_arena_log(3)
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(recs))
    res = import_files(empty_store, [path], "arena")
    assert res.status == "stored" and res.rows_stored == len(recs)
    v = empty_store.verdicts("arena").sort_values("source_line")
    assert v["battle_id"].tolist() == [str(i) for i in range(len(recs))]
    assert v["tstamp"].tolist() == df["tstamp"].tolist()
    assert set(v["judge"]) == {"human"} and v["annotator"].tolist() == df["judge"].tolist()
    want = df["winner"].map({"model_a": "A", "model_b": "B", "tie": "tie", "tie (bothbad)": "tie"})
    assert v["winner"].tolist() == want.tolist()
    # the repeated battles are not repeats (their num differs); without num they are kept and counted
    assert res.report.repeats == 0
    bare = [{k: x for k, x in r.items() if k != "num"} for r in recs]
    rep = validate_bytes(json.dumps(bare).encode(), "bare.json", dataset="d")
    content = df.drop(columns=["num"]).astype(str)
    assert rep.n_good == len(recs) and rep.repeats == int(content.duplicated().sum()) > 0
    assert rep.notes()[1] == f"{rep.repeats} rows repeat an earlier row; kept as separate verdicts."


def test_cli_several_judges_from_file_names(cli_db, tmp_path, capsys):
    paths = []
    for judge, winner in (("gpt4", "A"), ("claude", "B"), ("llama", "tie")):
        p = tmp_path / f"{judge}.csv"
        p.write_text(f"prompt_id,model_a,model_b,winner,extra\np1,x,y,{winner},1\np2,x,z,{winner},2\n")
        paths.append(str(p))
    rc = main(["--db", str(cli_db), "import", *paths, "--dataset", "three", "--judge-from", "filename"])
    out = capsys.readouterr().out
    assert rc == 0 and "read 6 = stored 6" in out
    assert "gpt4.csv: column not kept (not verdict fields): extra." in out
    from engine.store.connection import Store
    with Store(cli_db) as s:
        v = s.verdicts("three")
    assert v.groupby("judge")["winner"].apply(set).to_dict() == {
        "gpt4": {"A"},
        "claude": {"B"},
        "llama": {"tie"},
    }
    # the same file again is refused by its content; a new judge's file is added
    assert main(["--db", str(cli_db), "import", paths[0], "--dataset", "three"]) == 2
    err = capsys.readouterr().err
    assert "gpt4.csv is already in dataset 'three'" in err
    assert (
        "read 2 = stored 0 + rejected 0 + held back 2 (valid rows, not stored because the import was refused)"
        in err
    )
    other = tmp_path / "mistral.csv"
    other.write_text("prompt_id,model_a,model_b,winner\np1,x,y,B\n")
    assert (
        main(["--db", str(cli_db), "import", str(other), "--dataset", "three", "--judge-from", "filename"])
        == 0
    )


def test_cli_map_value_and_judge(cli_db, tmp_path, capsys):
    p = tmp_path / "lr.csv"
    p.write_text("prompt_id,model_a,model_b,winner\np1,x,y,left\np2,x,y,right\n")
    rc = main(["--db", str(cli_db), "import", str(p), "--dataset", "lr", "--map-value", "winner:left=A",
               "--map-value", "winner:right=B", "--judge", "crowd"])
    assert rc == 0
    from engine.store.connection import Store
    with Store(cli_db) as s:
        v = s.verdicts("lr")
    assert v[["winner", "judge"]].values.tolist() == [["A", "crowd"], ["B", "crowd"]]
    assert (
        main(["--db", str(cli_db), "import", str(p), "--dataset", "lr2", "--map-value", "winner=left"]) == 2
    )
    assert "COLUMN:VALUE=NEW" in capsys.readouterr().err  # one sentence, exit 2


@pytest.fixture
def cli_db(shipped_db, tmp_path):
    path = tmp_path / "cli.duckdb"
    shutil.copy(shipped_db, path)
    return path


def test_store_keeps_new_columns(empty_store):
    rep = validate_file(FIX / "alpha.jsonl", dataset="h")
    store_report(empty_store, rep, "h")
    v = empty_store.verdicts("h")
    assert v["strength"].astype(object).where(v["strength"].notna(), None).tolist() == [
        2,
        1,
        2,
        None,
        None,
        1,
    ]
    log = empty_store.cursor().execute("SELECT content_hashes, dropped_columns FROM import_log").fetchall()
    assert json.loads(log[0][0]) == {str(FIX / "alpha.jsonl"): rep.file_hashes[str(FIX / "alpha.jsonl")]}


def test_several_files_one_import_each_its_judge():
    paths = [FIX / "gpt-4_pair.jsonl", FIX / "alpha.jsonl"]
    rep = validate_paths(paths, dataset="d", file_judges={str(paths[0]): "J1", str(paths[1]): "J2"})
    assert rep.good.groupby("judge").size().to_dict() == {"J1": 6, "J2": 6}


def test_a_column_map_reads_canonical_columns_with_a_value_map():
    data = (FIX / "llmfao-comparisons.csv").read_bytes()
    cmap = {"left": "model_a", "right": "model_b", "prompt": "prompt_id"}
    rep = validate_bytes(data, "x.csv", dataset="d", column_map=cmap,
                         value_map={"winner": {"left": "A", "right": "B"}})
    assert rep.format == "csv" and rep.n_rejected == 0
    assert rep.good["winner"].tolist() == ["A", "B", "tie", "tie"]
    assert rep.good["battle_id"].tolist() == ["0", "1", "2", "3"]  # id is read as the battle id


def test_value_map_names_a_verdict_column():
    from engine.ingest.verdicts import parse_value_map

    assert parse_value_map(["winner:left=A", "Winner: right = B"]) == {"winner": {"left": "A", "right": "B"}}
    with pytest.raises(LensError, match="names column 'verdict', which is not a verdict column"):
        parse_value_map(["verdict:left=A"])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_new_columns_survive_export_and_reimport(empty_store, tmp_path, fmt):
    from engine.ingest.verdict_export import export_verdicts

    import_files(empty_store, [FIX / "alpha.jsonl", FIX / "arena_conversations.jsonl"], "src")
    out = tmp_path / f"out.{fmt}"
    export_verdicts(empty_store, "src", out, fmt)
    res = import_files(empty_store, [out], "back")
    assert res.status == "stored" and res.report.format == fmt
    cols = ["judge", "prompt_id", "model_a", "model_b", "winner", "order", "battle_id", "tstamp", "strength"]
    a, b = (empty_store.verdicts(d)[cols].astype(object) for d in ("src", "back"))
    pd.testing.assert_frame_equal(a.where(a.notna(), None), b.where(b.notna(), None))


def test_bt_over_an_imported_arena_log_equals_evalica_over_every_battle(empty_store, tmp_path):
    import evalica

    from engine.ranking.leaderboard import leaderboard

    recs, df = make_arena_log(5, n=300)
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(recs))
    assert import_files(empty_store, [path], "arena").rows_stored == len(recs)
    board = leaderboard(empty_store, "arena", ranker="bt")
    ours = board.table.set_index("model")["score"]
    win = df["winner"].map({"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y,
                            "tie": evalica.Winner.Draw, "tie (bothbad)": evalica.Winner.Draw})
    ev = evalica.bradley_terry(df["model_a"], df["model_b"], win, tolerance=1e-12, limit=100_000)
    ref = np.log(ev.scores.reindex(ours.index).to_numpy())
    np.testing.assert_allclose(ours.to_numpy() - ours.mean(), ref - ref.mean(), atol=1e-5)


def test_odd_values_in_tool_records_are_row_reasons_not_crashes():
    recs = [
        {
            "question_id": 1,
            "model_1": "x",
            "model_2": "y",
            "g1_winner": ["model_1"],
            "g2_winner": "model_9",
            "judge": ["gpt-4", "pair-v2"],
            "turn": 1,
        }
    ]
    rep = validate_bytes(json.dumps(recs[0]).encode() + b"\n", "p.jsonl", dataset="d")
    assert rep.rows_read == 2 and rep.n_rejected == 2
    assert rep.rejected["reason"].tolist() == [
        "winner value '[\"model_1\"]' is not one of A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or "
        "error",
        "winner value 'model_9' is not one of A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error",
    ]
