"""Storing verdicts (engine/ingest/importer.py) and the ``import`` / ``datasets`` commands, on a real
on-disk DuckDB store: all-or-nothing, --skip-invalid, replace/append, rename, delete, export,
and a property-style round trip file → store → Store.verdicts."""

from __future__ import annotations

import io
import json
import os
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.errors import LensError
from engine.ingest.importer import (
    delete_dataset,
    import_files,
    rename_dataset,
    store_report,
    validate_file,
)
from engine.ingest.verdict_export import export_verdicts
from engine.store.schema import VERDICT_COLUMNS

CONTENT = [c for c in VERDICT_COLUMNS if c not in ("dataset", "source_file", "source_line")]
GOOD_CSV = "prompt_id,model_a,model_b,winner\np1,x,y,A\np1,y,z,B\np2,x,z,tie\np2,x,y,error\n"
BAD_CSV = "prompt_id,model_a,model_b,winner\np1,x,y,A\np1,y,y,B\np2,x,z,what\np3,x,z,tie\n"


def count(store, table: str, dataset: str | None = None) -> int:
    sql, params = f"SELECT count(*) FROM {table}", []
    if dataset is not None:
        sql += " WHERE dataset = ?"
        params = [dataset]
    return int(store.cursor().execute(sql, params).fetchone()[0])


def log(store) -> pd.DataFrame:
    return store.cursor().execute("SELECT * FROM import_log ORDER BY import_id").df()


@pytest.fixture
def cli_db(shipped_db, tmp_path):
    """A store file that already went through first-use initialisation (a copy of the shipped one)."""
    path = tmp_path / "cli.duckdb"
    shutil.copy(shipped_db, path)
    return path


def write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# -- library -------------------------------------------------------------------------------------
def test_store_report_writes_rows_and_log(empty_store, tmp_path):
    rep = validate_file(write(tmp_path, "v.csv", GOOD_CSV), dataset="d")
    res = store_report(empty_store, rep, "d")
    assert (res.status, res.rows_read, res.rows_stored, res.rows_rejected, res.rows_invalid) == (
        "stored",
        4,
        4,
        0,
        1,
    )
    back = empty_store.verdicts("d")
    assert back["winner"].tolist() == ["A", "B", "tie", "invalid"]
    assert back["source_line"].tolist() == [2, 3, 4, 5]
    assert empty_store.dataset_version("d") == res.version
    lg = log(empty_store)
    assert lg[
        ["rows_read", "rows_stored", "rows_rejected", "rows_invalid", "status", "mode"]
    ].values.tolist() == [[4, 4, 0, 1, "stored", "all-or-nothing"]]


def test_all_or_nothing_stores_nothing(empty_store, tmp_path):
    store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    before = (count(empty_store, "verdicts"), empty_store.dataset_version("d"))
    res = store_report(empty_store, validate_file(write(tmp_path, "b.csv", BAD_CSV), dataset="d"), "d")
    # lines 3-4 are bad; line 2 equals a stored verdict, which is another vote, not an error
    assert res.status == "refused" and res.rows_stored == 0 and res.rows_rejected == 2
    assert sorted(res.report.rejected["source_line"]) == [3, 4]
    assert (count(empty_store, "verdicts"), empty_store.dataset_version("d")) == before
    assert log(empty_store)["status"].tolist() == ["stored", "refused"]
    # a new dataset is not created by a refused import either
    store_report(empty_store, validate_file(write(tmp_path, "b2.csv", BAD_CSV), dataset="e"), "e")
    assert not empty_store.has_dataset("e")


def test_skip_invalid_accounting(empty_store, tmp_path):
    rep = validate_file(write(tmp_path, "b.csv", BAD_CSV), dataset="d")
    res = store_report(empty_store, rep, "d", skip_invalid=True)
    assert res.status == "stored"
    assert res.rows_read == res.rows_stored + res.rows_rejected == 4
    assert count(empty_store, "verdicts", "d") == res.rows_stored == 2
    assert sorted(res.report.rejected["source_line"]) == [3, 4]


def test_replace_and_append(empty_store, tmp_path):
    first = store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    more = "prompt_id,model_a,model_b,winner\np9,x,y,B\np9,y,z,A\n"
    app = store_report(empty_store, validate_file(write(tmp_path, "m.csv", more), dataset="d"), "d")
    assert app.status == "stored" and app.version > first.version
    assert count(empty_store, "verdicts", "d") == 6
    # the same file again is refused by its content (even under another name), naming the stored file
    (tmp_path / "copy.csv").write_bytes((tmp_path / "m.csv").read_bytes())
    again = store_report(empty_store, validate_file(tmp_path / "copy.csv", dataset="d"), "d")
    assert again.status == "refused" and count(empty_store, "verdicts", "d") == 6
    assert "copy.csv is already in dataset 'd' (imported as m.csv)" in again.message
    assert "--replace" in again.message and again.report.n_rejected == 0
    # the same rows in a different file are other votes: stored
    (tmp_path / "m2.csv").write_text(more + "p9,x,z,tie\n")
    assert store_report(empty_store, validate_file(tmp_path / "m2.csv", dataset="d"), "d").status == "stored"
    assert count(empty_store, "verdicts", "d") == 9
    rep = store_report(empty_store, validate_file(tmp_path / "m.csv", dataset="d"), "d", replace=True)
    assert rep.status == "stored" and rep.version > app.version
    assert sorted(empty_store.verdicts("d")["prompt_id"]) == ["p9", "p9"]
    # after --replace only m.csv is in the dataset: g.csv may come back, m.csv may not
    assert store_report(empty_store, validate_file(tmp_path / "g.csv", dataset="d"), "d").status == "stored"
    assert store_report(empty_store, validate_file(tmp_path / "m.csv", dataset="d"), "d").status == "refused"


def test_texts_are_stored_and_replaced(empty_store, tmp_path):
    text = "prompt_id,model_a,model_b,winner,question,answer_a,answer_b\np1,x,y,A,Why?,ax,ay\n"
    store_report(empty_store, validate_file(write(tmp_path, "t.csv", text), dataset="d"), "d")
    assert empty_store.prompt_texts("d")[["prompt_id", "text"]].values.tolist() == [["p1", "Why?"]]
    assert empty_store.answer_texts("d")[["model", "text"]].values.tolist() == [["x", "ax"], ["y", "ay"]]
    store_report(
        empty_store,
        validate_file(write(tmp_path, "u.csv", "prompt_id,model_a,model_b,winner\nq,x,y,A\n"), dataset="d"),
        "d",
        replace=True,
    )
    assert count(empty_store, "prompts", "d") == 0 and count(empty_store, "answers", "d") == 0


def test_file_level_error_is_logged(empty_store, tmp_path):
    with pytest.raises(LensError, match="has no winner column"):
        import_files(empty_store, [write(tmp_path, "x.csv", "prompt_id,model_a,model_b\n1,x,y\n")], "d")
    lg = log(empty_store)
    assert lg["status"].tolist() == ["refused"] and "has no winner column" in lg["detail"].iloc[0]


def test_rename_delete_and_versions(empty_store, tmp_path):
    r = store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    v = rename_dataset(empty_store, "d", "e")
    assert v > r.version and not empty_store.has_dataset("d") and count(empty_store, "verdicts", "e") == 4
    with pytest.raises(LensError, match="no dataset named 'd'"):
        rename_dataset(empty_store, "d", "f")
    store_report(empty_store, validate_file(tmp_path / "g.csv", dataset="d"), "d")
    with pytest.raises(LensError, match="already exists"):
        rename_dataset(empty_store, "d", "e")
    assert delete_dataset(empty_store, "e") == 4
    assert count(empty_store, "verdicts", "e") == 0 and not empty_store.has_dataset("e")
    # re-creating a deleted name never reuses a version (cache keys stay unambiguous)
    again = store_report(empty_store, validate_file(tmp_path / "g.csv", dataset="e"), "e")
    assert again.version > v


def test_ground_truth_moves_with_rename_and_goes_with_delete_or_replace(empty_store, tmp_path):
    """A synthetic dataset's truth (table synthetic_truth) follows its rows: a rename moves it, an
    unrelated dataset later stored under the old name has none, a replace import and a delete drop it."""
    from engine.ingest.synthetic import SyntheticParams, synthetic_truth, write_synthetic

    params = SyntheticParams(n_models=5, categories=1, prompts=3, paraphrases=1, samples=0)
    write_synthetic(empty_store, "syn", params)
    truth = synthetic_truth(empty_store, "syn")
    assert len(truth) == 5 and count(empty_store, "synthetic_truth", "syn") == 5

    rename_dataset(empty_store, "syn", "syn2")
    pd.testing.assert_series_equal(synthetic_truth(empty_store, "syn2"), truth)
    assert count(empty_store, "synthetic_truth", "syn") == 0
    # an unrelated file under the old name: a plain dataset, no truth
    store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="syn"), "syn")
    with pytest.raises(LensError, match="no stored ground truth"):
        synthetic_truth(empty_store, "syn")
    flags = empty_store.datasets().set_index("name")["synthetic"]
    assert bool(flags["syn2"]) and not bool(flags["syn"])

    # replacing the synthetic dataset's rows with a plain file drops its truth and its flag
    store_report(empty_store, validate_file(tmp_path / "g.csv", dataset="syn2"), "syn2", replace=True)
    assert count(empty_store, "synthetic_truth", "syn2") == 0
    assert not bool(empty_store.datasets().set_index("name").loc["syn2", "synthetic"])

    write_synthetic(empty_store, "syn3", params)
    assert delete_dataset(empty_store, "syn3") > 0
    assert count(empty_store, "synthetic_truth") == 0

    # a truth row left behind under a name (a store written by an older version) never reaches
    # the dataset that takes the name, whether stored afresh or renamed onto it
    with empty_store.transaction() as tx:
        tx.execute("INSERT INTO synthetic_truth VALUES ('late', 'x', 1.0, 1, 0), ('moved', 'x', 1.0, 1, 0)")
    store_report(empty_store, validate_file(tmp_path / "g.csv", dataset="late"), "late")
    rename_dataset(empty_store, "syn", "moved")
    assert count(empty_store, "synthetic_truth") == 0


def random_verdicts(seed: int, n: int = 60) -> pd.DataFrame:
    """A random valid verdict table (distinct rows) in the canonical import format."""
    rng = np.random.default_rng(seed)
    models = ["m-1", "m,2", "m 3", "m\"4", "ünï"]
    rows = []
    for i in range(n):
        a, b = rng.choice(len(models), size=2, replace=False)
        rows.append({
            "judge": str(rng.choice(["j1", "j2"])),
            "prompt_id": f"q{i}",
            "variant": int(rng.integers(0, 3)),
            "turn": int(rng.integers(1, 3)),
            "category": None if rng.random() < 0.3 else str(rng.choice(["math", "code, misc"])),
            "model_a": models[a], "model_b": models[b],
            "winner": str(rng.choice(["A", "B", "tie", "error"])),
            "order": None if rng.random() < 0.3 else str(rng.choice(["AB", "BA"])),
            "prob_a": None if rng.random() < 0.4 else float(np.round(rng.random(), 6)),
            "annotator": None if rng.random() < 0.5 else f"a{int(rng.integers(0, 4))}",
            "explanation": None if rng.random() < 0.3 else f"line one\nline \"two\", {i}",
        })
    return pd.DataFrame(rows)


def expected_frame(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out["winner"] = out["winner"].replace({"error": "invalid"})
    out["variant_kind"] = np.where(out["variant"] == 0, "original", "paraphrase")
    out = out.reindex(columns=CONTENT)  # battle_id, tstamp, strength: not in these files
    return out[CONTENT].astype(object).where(out[CONTENT].notna(), None).reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_round_trip(empty_store, tmp_path, seed, fmt):
    df = random_verdicts(seed)
    path = tmp_path / f"v.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps({k: v for k, v in r.items() if v is not None}) for r in
                                  df.astype(object).where(df.notna(), None).to_dict("records")) + "\n")
    else:
        df.to_parquet(path, index=False)
    res = import_files(empty_store, [path], "rt")
    assert res.status == "stored" and res.rows_stored == len(df)
    got = empty_store.verdicts("rt")[CONTENT]
    got = got.astype(object).where(got.notna(), None)
    pd.testing.assert_frame_equal(got, expected_frame(df), check_dtype=False)
    # export → import into another dataset gives the same verdicts back
    out = tmp_path / f"out.{fmt}"
    export_verdicts(empty_store, "rt", out, fmt)
    import_files(empty_store, [out], "rt2")
    again = empty_store.verdicts("rt2")[CONTENT]
    pd.testing.assert_frame_equal(again.astype(object).where(again.notna(), None), got, check_dtype=False)


def test_export_to_buffer(empty_store, tmp_path):
    store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    buf = io.StringIO()
    assert export_verdicts(empty_store, "d", buf, "csv") == 4
    back = pd.read_csv(io.StringIO(buf.getvalue()))
    assert back["winner"].tolist() == ["A", "B", "tie", "error"]
    with pytest.raises(LensError, match="Cannot export as 'xml'"):
        export_verdicts(empty_store, "d", buf, "xml")


# -- command line --------------------------------------------------------------------------------
NO_JUDGE = ("bad.csv: 4 rows name no judge; read as judge 'bad', named after the file (to name it: "
            "--judge NAME, or the Data page's judge box).")
"""The import's note for BAD_CSV, which has no judge column (issue 25: never the placeholder 'judge')."""


def test_cli_import_refused(cli_db, tmp_path, capsys):
    path = write(tmp_path, "bad.csv", BAD_CSV)
    rc = main(["--db", str(cli_db), "import", str(path), "--dataset", "mine"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err == [
        f"{path} line 3: model_a and model_b are the same model (y).",
        f"{path} line 4: winner value 'what' is not one of A, B, tie, model_a, model_b, tie (bothbad), 1, 2, "
        "1.5 or error.",
        NO_JUDGE,
        "read 4 = stored 0 + rejected 2 + held back 2 (valid rows, not stored because the import is "
        "all-or-nothing)",
        "error: 2 of 4 rows were rejected, so nothing was stored "
        "(fix them, or use --skip-invalid to store the others).",
    ]
    from engine.store.connection import Store
    with Store(cli_db) as s:
        assert not s.has_dataset("mine")
        assert log(s)["status"].tolist()[-1] == "refused"


def test_cli_import_skip_invalid_writes_rejected(cli_db, tmp_path, capsys):
    path = write(tmp_path, "bad.csv", BAD_CSV)
    rc = main(["--db", str(cli_db), "import", str(path), "--dataset", "mine", "--skip-invalid"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[:2] == [NO_JUDGE, "read 4 = stored 2 + rejected 2 (invalid judge outputs stored: 0)"]
    rej = pd.read_csv(f"{path}.rejected.csv")
    assert rej["source_line"].tolist() == [3, 4]
    assert rej[["model_a", "model_b", "winner"]].values.tolist() == [["y", "y", "B"], ["x", "z", "what"]]
    custom = tmp_path / "r.csv"
    rc = main(["--db", str(cli_db), "import", str(path), "--dataset", "other", "--skip-invalid",
               "--rejected", str(custom)])
    assert rc == 0 and len(pd.read_csv(custom)) == 2


def test_cli_datasets_list_rename_export_delete(cli_db, tmp_path, capsys):
    path = write(tmp_path, "g.csv", GOOD_CSV)
    assert main(["--db", str(cli_db), "import", str(path), "--dataset", "mine"]) == 0
    assert "read 4 = stored 4 + rejected 0 (invalid judge outputs stored: 1)" in capsys.readouterr().out
    assert main(["--db", str(cli_db), "datasets", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    mine = table.set_index("name").loc["mine"]
    assert (mine["verdicts"], mine["invalid"], mine["judges"], mine["models"], mine["prompts"]) == (
        4,
        1,
        1,
        3,
        2,
    )
    assert main(["--db", str(cli_db), "datasets", "rename", "mine", "yours"]) == 0
    out = tmp_path / "e.jsonl"
    assert main(["--db", str(cli_db), "datasets", "export", "yours", str(out)]) == 0
    assert [json.loads(x)["winner"] for x in out.read_text().splitlines()] == ["A", "B", "tie", "error"]
    assert main(["--db", str(cli_db), "datasets", "delete", "yours"]) == 0
    capsys.readouterr()
    assert main(["--db", str(cli_db), "datasets", "delete", "yours"]) == 2
    assert "no dataset named 'yours'" in capsys.readouterr().err


def test_cli_import_review_folder_with_names(cli_db, tmp_path, capsys):
    d = tmp_path / "reviews"
    d.mkdir()
    rows = [{"review_id": str(i), "question_id": i, "reviewer_id": 1, "text": "t", "score": s}
            for i, s in enumerate([1, 2, 3, -1], start=1)]
    for a, b in (("x", "y"), ("y", "x")):
        (d / f"answer_{a}-vs-answer_{b}-gpt4-reviewer_threeclass.jsonl").write_text(
            "\n".join(json.dumps(r) for r in rows) + "\n")
    files = sorted(map(str, d.glob("*.jsonl")))
    rc = main(["--db", str(cli_db), "import", *files, "--dataset", "rev", "--judge-name", "gpt4=gpt-4",
               "--model-name", "x=model-x"])
    assert rc == 0
    assert "read 8 = stored 8 + rejected 0 (invalid judge outputs stored: 2)" in capsys.readouterr().out
    from engine.store.connection import Store
    with Store(cli_db) as s:
        v = s.verdicts("rev")
    assert set(v["judge"]) == {"gpt-4"} and set(v["model_a"]) == {"model-x", "y"}
    assert v.groupby("model_a")["winner"].apply(list).to_dict() == {
        "model-x": ["A", "B", "tie", "invalid"], "y": ["A", "B", "tie", "invalid"]}


def test_cli_bad_arguments(cli_db, tmp_path, capsys):
    path = write(tmp_path, "g.csv", GOOD_CSV)
    assert main(["--db", str(cli_db), "import", str(path), "--dataset", "m", "--map", "nonsense"]) == 2
    assert "--map 'nonsense' is not of the form OLD=NEW" in capsys.readouterr().err
    assert main(["--db", str(cli_db), "import", str(tmp_path / "nope.csv"), "--dataset", "m"]) == 2
    assert "There is no file" in capsys.readouterr().err
    assert main(["--db", str(cli_db), "datasets", "export", "vicuna80", str(tmp_path / "x.xml")]) == 2
    assert "Cannot tell the export format" in capsys.readouterr().err


def test_cli_check_stores_nothing(cli_db, tmp_path, capsys):
    path = write(tmp_path, "bad.csv", BAD_CSV)
    assert main(["--db", str(cli_db), "import", str(path), "--dataset", "chk", "--check"]) == 2
    cap = capsys.readouterr()
    assert cap.out.strip().splitlines() == [
        NO_JUDGE, "read 4 = valid 2 + rejected 2 (invalid judge outputs: 0); nothing stored (--check)"]
    assert len(cap.err.strip().splitlines()) == 2
    good = write(tmp_path, "g.csv", GOOD_CSV)
    assert main(["--db", str(cli_db), "import", str(good), "--dataset", "chk", "--check"]) == 0
    from engine.store.connection import Store
    with Store(cli_db) as s:
        assert not s.has_dataset("chk")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_file_columns(tmp_path, fmt):
    from engine.ingest.importer import file_columns

    df = pd.DataFrame({"QID": ["1"], "left": ["x"], "right": ["y"], "Verdict": ["A"]})
    path = tmp_path / f"v.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_parquet(path, index=False)
    assert file_columns(path) == ["QID", "left", "right", "Verdict"]
    assert file_columns(path.read_bytes(), path.name) == ["QID", "left", "right", "Verdict"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_to_bytes_buffer_reimports(empty_store, tmp_path, fmt):
    """The app's download button hands a BytesIO; what it gets must import back to the same rows."""
    from engine.ingest.importer import validate_file as vf

    store_report(empty_store, vf(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    buf = io.BytesIO()
    assert export_verdicts(empty_store, "d", buf, fmt) == 4
    rep = vf(buf.getvalue(), f"d.{fmt}", dataset="d2")
    assert rep.n_rejected == 0
    pd.testing.assert_frame_equal(rep.good[CONTENT], empty_store.verdicts("d")[CONTENT], check_dtype=False)


# -- read = stored + rejected (+ held back), and the rejected file -----------------------------------
ACCOUNT = re.compile(r"read (\d+) = stored (\d+) \+ rejected (\d+)(?: \+ held back (\d+))?")


def account(text: str) -> tuple[int, int, int, int]:
    """The numbers of the one `read ...` line in ``text``; asserts there is exactly one."""
    found = [m.groups() for m in map(ACCOUNT.match, text.splitlines()) if m]
    assert len(found) == 1, text
    return tuple(int(x or 0) for x in found[0])


@pytest.mark.parametrize(("csv_text", "skip", "expect"), [
    (GOOD_CSV, False, (4, 4, 0, 0)),
    (BAD_CSV, False, (4, 0, 2, 2)),  # refused: the 2 valid rows are held back
    (BAD_CSV, True, (4, 2, 2, 0)),
    ("prompt_id,model_a,model_b,winner\np,x,x,A\nq,y,z,what\n", True, (2, 0, 2, 0)),
    ("prompt_id,model_a,model_b,winner\np,x,x,A\nq,y,z,what\n", False, (2, 0, 2, 0)),
])
def test_cli_always_prints_read_equals_stored_plus_rejected(cli_db, tmp_path, capsys, csv_text, skip, expect):
    path = write(tmp_path, "v.csv", csv_text)
    rc = main(
        ["--db", str(cli_db), "import", str(path), "--dataset", "acc", *(["--skip-invalid"] if skip else [])]
    )
    cap = capsys.readouterr()
    read, stored, rejected, held = account(cap.out + cap.err)
    assert (read, stored, rejected, held) == expect
    assert read == stored + rejected + held
    # counted another way: data lines of the file, and what the store holds afterwards
    assert read == len(csv_text.strip().splitlines()) - 1
    from engine.store.connection import Store
    with Store(cli_db) as s:
        n = len(s.verdicts("acc")) if s.has_dataset("acc") else 0
    assert n == stored and rc == (0 if stored else 2)


def test_import_result_accounting_holds_for_every_outcome(empty_store, tmp_path):
    for text, skip in ((GOOD_CSV, False), (BAD_CSV, False), (BAD_CSV, True), (GOOD_CSV, False)):
        res = store_report(empty_store, validate_file(write(tmp_path, "v.csv", text), dataset="d"), "d",
                           skip_invalid=skip)
        assert res.rows_read == res.rows_stored + res.rows_rejected + res.rows_held
        assert (res.rows_held > 0) == (res.status == "refused" and res.report.n_good > 0)
        nums = account(res.summary())
        assert nums == (res.rows_read, res.rows_stored, res.rows_rejected, res.rows_held)


def test_cli_skip_invalid_with_every_row_rejected_still_writes_the_file(cli_db, tmp_path, capsys):
    path = write(tmp_path, "allbad.csv", "prompt_id,model_a,model_b,winner\np,x,x,A\nq,y,z,what\n")
    rc = main(["--db", str(cli_db), "import", str(path), "--dataset", "none", "--skip-invalid"])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert err[-3:] == ["read 2 = stored 0 + rejected 2 (invalid judge outputs stored: 0)",
                        f"rejected rows written to {path}.rejected.csv",
                        "error: no valid rows to store, so nothing was stored."]
    rej = pd.read_csv(f"{path}.rejected.csv")
    assert rej["source_line"].tolist() == [2, 3] and rej["winner"].tolist() == ["A", "what"]


def test_cli_explicit_rejected_file_in_all_or_nothing_mode(cli_db, tmp_path, capsys):
    path = write(tmp_path, "bad.csv", BAD_CSV)
    out = tmp_path / "why.csv"
    assert main(["--db", str(cli_db), "import", str(path), "--dataset", "m", "--rejected", str(out)]) == 2
    capsys.readouterr()
    assert pd.read_csv(out)["source_line"].tolist() == [3, 4]


def _log_count(db) -> int:
    from engine.store.connection import Store
    with Store(db) as s:
        return len(log(s))


@pytest.mark.parametrize("where", ["missing-folder", "folder", "input", "system"])
def test_cli_unwritable_rejected_path_stores_nothing(cli_db, tmp_path, capsys, where):
    """The audit's case: --rejected /nonexistent/dir/r.csv printed a traceback after storing the good rows."""
    path = write(tmp_path, "bad.csv", BAD_CSV)
    target, sentence = {
        "missing-folder": (
            "/nonexistent/dir/r.csv",
            "error: Cannot write the rejected rows to /nonexistent/dir/r.csv: there is no folder "
            "/nonexistent/dir.",
        ),
        "folder": (
            str(tmp_path),
            f"error: Cannot write the rejected rows to {tmp_path}: it is a folder; give a file name.",
        ),
        "input": (
            str(path),
            f"error: The rejected rows would overwrite the input file {path}; give another --rejected path.",
        ),
        "system": ("/sys/r.csv", "error: Cannot write the rejected rows to /sys/r.csv (Permission denied)."),
    }[where]
    if where == "system" and not os.path.isdir("/sys"):
        pytest.skip("no /sys on this system")
    before = _log_count(cli_db)
    rc = main(
        [
            "--db",
            str(cli_db),
            "import",
            str(path),
            "--dataset",
            "mine",
            "--skip-invalid",
            "--rejected",
            target,
        ]
    )
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == "" and cap.err.splitlines() == [sentence]
    from engine.store.connection import Store
    with Store(cli_db) as s:
        assert not s.has_dataset("mine")
    assert _log_count(cli_db) == before
    assert path.read_text() == BAD_CSV


def test_cli_default_rejected_file_in_a_read_only_folder(cli_db, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = write(folder, "bad.csv", BAD_CSV)
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root ignores the mode; the /sys case above covers root
            pytest.skip("this user can write to a read-only folder")
        rc = main(["--db", str(cli_db), "import", str(path), "--dataset", "mine", "--skip-invalid"])
        err = capsys.readouterr().err.splitlines()
        assert rc == 2
        assert err == [f"error: Cannot write the rejected rows to {path}.rejected.csv (Permission denied)."]
    finally:
        folder.chmod(0o755)
    from engine.store.connection import Store
    with Store(cli_db) as s:
        assert not s.has_dataset("mine")


def test_export_to_a_missing_folder_is_one_sentence(cli_db, tmp_path, capsys):
    from engine.store.connection import Store
    with Store(cli_db) as s, pytest.raises(LensError, match=r"there is no folder /nonexistent\.$"):
        export_verdicts(s, "vicuna80", "/nonexistent/x.csv")
    assert main(["--db", str(cli_db), "datasets", "export", "vicuna80", "/nonexistent/x.csv"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: Cannot write the verdicts of 'vicuna80' to /nonexistent/x.csv: there is no folder "
        "/nonexistent."
    ]
    if os.path.isdir("/sys"):
        assert main(["--db", str(cli_db), "datasets", "export", "vicuna80", "/sys/x.parquet"]) == 2
        assert capsys.readouterr().err.splitlines() == [
            "error: Cannot write the verdicts of 'vicuna80' to /sys/x.parquet (Permission denied)."]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_leaves_only_the_file(empty_store, tmp_path, fmt):
    """Writes go through a temp file and a rename: afterwards the folder holds the file, nothing else."""
    store_report(empty_store, validate_file(write(tmp_path, "g.csv", GOOD_CSV), dataset="d"), "d")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / f"d.{fmt}"
    target.write_text("old content")
    assert export_verdicts(empty_store, "d", target, fmt) == 4
    assert sorted(p.name for p in out_dir.iterdir()) == [target.name]
    assert validate_file(target, dataset="d").n_good == 4
