"""Issue 15 item 4: every CSV the tool writes is inert in a spreadsheet (OWASP CSV injection rule),
while JSON / JSON lines / Parquet keep raw values and a CSV the tool wrote imports back unchanged.

The check on every written CSV is independent of engine/views/exports.py: each cell is parsed back with
the ``csv`` module and tested against the rule written out here (a cell a spreadsheet would evaluate
starts with = + - @ tab or CR and is not a plain number).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import random
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.ingest.importer import import_files
from engine.ingest.verdict_export import export_verdicts
from engine.views.exports import neutralise_cell, restore_csv_cell, results_zip

HOSTILE = [
    '=HYPERLINK("http://evil.example/?x=1","click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "plain-model",
]
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def evaluated_cells(text: str) -> list[str]:
    """Cells of a CSV text that a spreadsheet would evaluate as a formula."""
    bad = []
    for row in csv.reader(io.StringIO(text, newline="")):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(cell):
                bad.append(cell)
    return bad


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"),
        ("\rx", "'\rx"), ("-", "'-"), ("-inf", "'-inf"), ("'quoted", "''quoted"),
        ("-0.5", "-0.5"), ("+3", "+3"), ("-1e-3", "-1e-3"), (".5", ".5"), ("model=a", "model=a"), ("", ""),
        (-0.5, -0.5), (3, 3), (None, None),
    ],
)  # fmt: skip
def test_the_rule_cell_by_cell(raw, written):
    assert neutralise_cell(raw) == written
    assert restore_csv_cell(written) == raw


def test_restore_undoes_neutralise_on_random_strings():
    rng = random.Random(0)
    alphabet = "=+-@'\t\r a1.e"
    for _ in range(5000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        assert restore_csv_cell(neutralise_cell(s)) == s
        out = neutralise_cell(s)
        assert not (out[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(out))


def _hostile_verdicts(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for judge in ("=judge()", "@judge2"):
        for p in range(12):
            for a, b in itertools.combinations(HOSTILE, 2):
                rows.append({"prompt_id": f"-p{p}" if p % 2 else f"p{p}", "model_a": a, "model_b": b,
                             "winner": rng.choice(["A", "B", "tie"]), "judge": judge, "category": f"c{p % 3}",
                             "order": "AB"})
    df = pd.DataFrame(rows)
    df["dataset"], df["variant"], df["turn"], df["variant_kind"], df["prob_a"] = "d", 0, 1, "original", np.nan
    return df


def test_the_app_results_zip_is_inert_and_its_json_raw():
    from engine.graphs.stack import build_stack
    from engine.views.appstate import app_leaderboard
    from engine.views.viz import cycle_overview, judge_overview

    v = _hostile_verdicts()
    stack = build_stack(v)
    board = app_leaderboard(stack, ranker="bt", keep_k=None, mu=1.0, bootstrap=10, seed=0, reference=None,
                            reference_note="")
    data = results_zip(board, cycle_overview(stack), judge_overview(v, stack), mu=1.0)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        csvs = {n: zf.read(n).decode() for n in zf.namelist() if n.endswith(".csv")}
        doc = json.loads(zf.read("leaderboard.json"))
    assert len(csvs) >= 5
    for name, text in csvs.items():
        assert evaluated_cells(text) == [], name
    lb = pd.read_csv(io.StringIO(csvs["leaderboard.csv"]))
    assert sorted(lb["model"].map(restore_csv_cell)) == sorted(HOSTILE)  # read back, the names are exact
    assert sorted(r["model"] for r in doc["table"]) == sorted(HOSTILE)  # JSON keeps raw values
    kappa = pd.read_csv(io.StringIO(csvs["judges_kappa_matrix.csv"]))
    assert set(kappa.columns) == {"judge", "'=judge()", "'@judge2"}  # column names too


def _import_hostile(store, tmp_path) -> None:
    v = _hostile_verdicts().drop(columns=["dataset", "variant_kind", "prob_a"])
    path = tmp_path / "hostile.jsonl"
    path.write_text(v.to_json(orient="records", lines=True), encoding="utf-8")
    res = import_files(store, [path], "hostile")
    assert res.status == "stored"


def test_datasets_export_csv_is_inert_and_reimports_exactly(empty_store, tmp_path):
    _import_hostile(empty_store, tmp_path)
    out_csv, out_jsonl = tmp_path / "e.csv", tmp_path / "e.jsonl"
    export_verdicts(empty_store, "hostile", out_csv, "csv")
    export_verdicts(empty_store, "hostile", out_jsonl, "jsonl")
    text = out_csv.read_text(encoding="utf-8")
    assert evaluated_cells(text) == []
    assert "'=HYPERLINK(" in text and "'-p1" in text
    raw = [json.loads(x) for x in out_jsonl.read_text(encoding="utf-8").splitlines()]
    assert {r["model_a"] for r in raw} | {r["model_b"] for r in raw} == set(HOSTILE)  # JSON lines raw
    import_files(empty_store, [out_csv], "again")
    cols = ["judge", "prompt_id", "model_a", "model_b", "winner"]
    first = empty_store.verdicts("hostile")[cols].sort_values(cols).reset_index(drop=True)
    again = empty_store.verdicts("again")[cols].sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(first, again)


def test_cli_csv_outputs_are_inert_and_json_raw(tmp_path, capsys, shipped_db_copy):
    db = shipped_db_copy  # `datasets` on a new file would first import the shipped datasets
    from engine.store.connection import Store

    with Store(db) as st:
        _import_hostile(st, tmp_path)
    out_csv = tmp_path / "x.csv"
    assert main(["--db", str(db), "datasets", "export", "hostile", str(out_csv)]) == 0
    assert evaluated_cells(out_csv.read_text(encoding="utf-8")) == []
    capsys.readouterr()
    for command in (["leaderboard", "--dataset", "hostile"], ["graphs", "--dataset", "hostile"],
                    ["diagnose", "--dataset", "hostile"]):
        assert main(["--db", str(db), *command, "--format", "csv"]) == 0, command
        text = capsys.readouterr().out
        assert evaluated_cells(text) == [], command
    assert main(["--db", str(db), "leaderboard", "--dataset", "hostile", "--format", "csv"]) == 0
    board = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert sorted(board["model"].map(restore_csv_cell)) == sorted(HOSTILE)
    assert main(["--db", str(db), "leaderboard", "--dataset", "hostile", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc if isinstance(doc, list) else doc.get("table", doc.get("rows", []))
    assert sorted(r["model"] for r in rows) == sorted(HOSTILE)


def test_rejected_rows_csv_is_inert(empty_store, tmp_path):
    from engine.ingest.importer import validate_file
    from engine.ingest.verdict_export import write_rejected

    path = tmp_path / "bad.csv"
    path.write_text('prompt_id,model_a,model_b,winner\np1,"=cmd()",m2,maybe\n', encoding="utf-8")
    report = validate_file(path, dataset="d")
    out = tmp_path / "rejected.csv"
    assert write_rejected(report, out) == 1
    text = out.read_text(encoding="utf-8")
    assert evaluated_cells(text) == [] and "'=cmd()" in text
