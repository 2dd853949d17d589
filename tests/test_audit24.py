"""Issue 24 as a user meets it on shapes beyond vicuna80 (the audit part): a misnamed dataset under the
new flags, and the predicted table of a fit that needed virtual ties."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from cli_inprocess import run_engine


def run_cli(db, *args):
    """``python -m engine --db DB ARGS`` (in this process): exit code, stdout, stderr."""
    done = run_engine(["--db", db, *args])
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def never_loses_db(tmp_path_factory):
    """A store with one dataset in which model 'top' wins every battle it is in (no MLE exists)."""
    tmp = tmp_path_factory.mktemp("audit24")
    rows = ["prompt_id,model_a,model_b,winner,judge"]
    others = ["m1", "m2", "m3"]
    k = 0
    for rep in range(6):
        for i, a in enumerate(others):
            rows.append(f"p{k},top,{a},A,j")
            k += 1
            for b in others[i + 1:]:
                rows.append(f"p{k},{a},{b},{'A' if rep % 3 else ('B' if rep % 2 else 'tie')},j")
                k += 1
    path = tmp / "never_loses.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    db = tmp / "lens.duckdb"
    rc, _, err = run_cli(db, "import", "--dataset", "nl", str(path))
    assert rc == 0, err
    return db


@pytest.mark.parametrize("flags", [(), ("--style-control",), ("--baseline", "m1"), ("--ci", "sandwich")])
def test_leaderboard_names_a_missing_dataset_under_every_flag(never_loses_db, flags):
    """Kills: --style-control / --baseline reading rows before the dataset is checked, which said
    "Dataset 'nosuch' has no valid verdict." (a dataset that does not exist is not one without verdicts)."""
    rc, out, err = run_cli(never_loses_db, "leaderboard", "--dataset", "nosuch", *flags)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    listed = lines[0].split("datasets: ")[-1].rstrip(").").split(", ")
    assert len(lines) == 1 and "no dataset named 'nosuch'" in lines[0] and "nl" in listed, err


def test_predicted_table_says_when_the_fit_added_virtual_ties(never_loses_db):
    """'top' never loses, so the BT fit behind `diagnose --table predicted` adds virtual ties: every
    predicted cell depends on them. Second path: the notes `leaderboard` prints for the same selection.
    Kills: the predicted table printed without the board's notes (the old code: stderr empty)."""
    rc, out, err = run_cli(never_loses_db, "diagnose", "--dataset", "nl", "--table", "predicted",
                           "--format", "csv")
    assert rc == 0, err
    table = pd.read_csv(io.StringIO(out))
    top = table[table.model_a == "top"]
    assert (top.win_fraction == 1.0).all() and (top.predicted < 1.0).all()
    rc, _, board_err = run_cli(never_loses_db, "leaderboard", "--dataset", "nl", "--format", "csv")
    virtual = [line for line in board_err.splitlines() if "virtual tie" in line]
    assert rc == 0 and len(virtual) == 1
    assert virtual[0] in err.splitlines()


def test_style_table_on_the_page_carries_rank_ub_as_the_cli_does(shipped_store, shipped_db):
    """The Leaderboard page's style-controlled table (engine.views.style_view, what the page draws) shows
    rank (UB) of the controlled intervals, equal to a pairwise count over the board's intervals and to
    `leaderboard --style-control --format json`. Kills: the page's style table without the column (the
    old view: the CLI had rank_ub, the page did not)."""
    import json

    import numpy as np

    from engine.ranking.board import BoardSpec
    from engine.ranking.leaderboard import leaderboard
    from engine.views.style_view import style_view

    board = leaderboard(shipped_store, "vicuna80", BoardSpec(ranker="bt", style_control=True, ci="sandwich"))
    frame = style_view(board, ranker="bt").frame.set_index("model")
    t = board.table.set_index("model")
    low, high = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    brute = 1 + (low[None, :] > high[:, None]).sum(axis=1)
    assert np.all(np.isfinite(low)) and len(set(brute)) > 1  # the intervals separate some models
    assert frame.loc[t.index, "rank_ub"].astype(int).tolist() == brute.tolist()
    rc, out, err = run_cli(shipped_db, "leaderboard", "--style-control", "--format", "json")
    assert rc == 0, err
    cli = {r["model"]: r["rank_ub"] for r in json.loads(out)["table"]}
    assert {m: int(frame.loc[m, "rank_ub"]) for m in frame.index} == cli


def test_length_control_refusal_names_no_cli_flag(never_loses_db):
    """The page shows this sentence in its error box (app_pages/_length_control.py via lc_table), so it
    must not speak of a command-line flag the page user never typed; the CLI shows it too. Kills: the
    old sentence '--length-control needs the answer texts ...'."""
    from engine.errors import LensError
    from engine.store.connection import Store
    from engine.views.length_control_view import lc_table

    store = Store(never_loses_db)
    try:
        with pytest.raises(LensError) as caught:
            lc_table(store, "nl", "m1")
    finally:
        store.close()
    message = str(caught.value)
    assert "--" not in message and "needs the answer texts of both sides" in message
    rc, _, err = run_cli(never_loses_db, "leaderboard", "--dataset", "nl", "--baseline", "m1",
                         "--length-control")
    assert rc == 2 and message in err


def test_lmarena_140k_both_bad_imports_as_a_tie(tmp_path):
    """LMArena's 140k release writes a both-bad draw as winner 'both_bad' (arena-rank: outcome 0.5). Such a
    file imports without a value map and each both_bad row is a tie; second path: the count of both_bad
    rows in the file, and the tie counts of `leaderboard`. Kills: the old refusal ('winner value
    'both_bad' is not one of ...'), a both_bad read as a win."""
    import json

    battles = [("x", "y", "model_a"), ("x", "y", "both_bad"), ("y", "z", "both_bad"), ("x", "z", "tie"),
               ("z", "x", "model_b"), ("y", "x", "tie (bothbad)")]
    path = tmp_path / "arena140k.jsonl"
    path.write_text("".join(json.dumps({"id": f"b{i}", "model_a": a, "model_b": b, "winner": w,
                                        "timestamp": f"2025-05-0{i + 1}T00:00:00Z"}) + "\n"
                            for i, (a, b, w) in enumerate(battles)), encoding="utf-8")
    db = tmp_path / "lens.duckdb"
    rc, _, err = run_cli(db, "import", "--dataset", "a", "--format", "arena", str(path))
    assert rc == 0, err
    rc, out, err = run_cli(db, "leaderboard", "--dataset", "a", "--format", "csv")
    assert rc == 0, err
    t = pd.read_csv(io.StringIO(out)).set_index("model")
    draws = ("both_bad", "tie", "tie (bothbad)")
    ties = {m: sum(w in draws for a, b, w in battles if m in (a, b)) for m in "xyz"}
    assert t["ties"].to_dict() == ties and t["wins"].sum() == 2
