"""README and command line agree: every option the README's command table names exists, bracketed
options are optional and bare ones required, the stated defaults hold, and the stated output rules
(interval columns only with --bootstrap, compare's rho and distance, pooled judges, terminal
summaries) are what the commands do."""

from __future__ import annotations

import argparse
import io
import os
import pty
import re
import subprocess
import sys

import pandas as pd
import pytest
from cli_inprocess import run_engine
from conftest import REPO
from scipy.stats import spearmanr

from engine.__main__ import build_parser
from engine.store.schema import DEFAULT_DATASET


def run_cli(db, *args):
    """``python -m engine --db DB ARGS`` (in this process): exit code, stdout, stderr."""
    done = run_engine(["--db", db, *args])
    return done.returncode, done.stdout, done.stderr


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def readme_usages() -> list[str]:
    """The first backticked usage of every row of the README's command table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("| command | what it does |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        rows.append(line[3:line.index("`", 3)].replace("\\|", "|"))
    return rows


def options_with_depth(usage: str) -> list[tuple[str, int]]:
    """Every --option of a usage line with its bracket depth (0: written as required)."""
    found, depth = [], 0
    for tok in re.findall(r"\[|\]|--[a-z][a-z-]*", usage):
        if tok == "[":
            depth += 1
        elif tok == "]":
            depth -= 1
        else:
            found.append((tok, depth))
    return found


REFUSED_BY_THE_COMMAND = {("judge", "--model")}
"""Options the README writes as required that argparse declares optional: judge's --model belongs to the
backend option group shared with generate and perturb (engine.cli.judge.add_backend_args); the
backend is what refuses a run without a model."""


def test_every_readme_option_exists_with_the_written_requiredness():
    commands = _subparsers(build_parser())
    usages = readme_usages()
    assert len(usages) >= 11
    checked = 0
    for usage in usages:
        name = usage.split()[0]
        assert name in commands, usage
        parser = commands[name]
        subs = _subparsers(parser)
        targets = [subs[s] for s in usage.split()[1].split("|")] if subs and usage.split()[1:] and \
            usage.split()[1].split("|")[0] in subs else [parser]
        for opt, depth in options_with_depth(usage):
            for target in targets:
                action = next((a for a in target._actions if opt in a.option_strings), None)
                assert action is not None, f"README names {opt} for {name}, the parser has no such option"
                if (name, opt) not in REFUSED_BY_THE_COMMAND:
                    assert action.required == (depth == 0), (
                        f"{name} {opt}: README depth {depth}, required={action.required}"
                    )
                if opt == "--dataset" and depth > 0:
                    assert action.default == DEFAULT_DATASET, f"{name} --dataset default {action.default!r}"
                checked += 1
    assert checked > 40


def test_commands_that_read_a_dataset_run_without_it(shipped_db):
    rc, out, err = run_cli(shipped_db, "graphs", "--judge", "gpt-4", "--format", "csv")
    assert rc == 0, err
    assert len(pd.read_csv(io.StringIO(out))) == 80  # vicuna80: 80 prompts, one graph each for gpt-4
    rc, out, err = run_cli(shipped_db, "triads", "--prompt-id", "1", "--judge", "gpt-4", "--format", "csv")
    assert rc == 0 and list(pd.read_csv(io.StringIO(out)).columns[:4]) == [
        "model_a",
        "model_b",
        "model_c",
        "kind",
    ]


def test_interval_columns_only_with_bootstrap_said_once(shipped_db):
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--format", "csv")
    cols = list(pd.read_csv(io.StringIO(out)).columns)
    assert rc == 0 and not {"ci_low", "ci_high", "rank_low", "rank_high"} & set(cols)
    assert err.count("no --bootstrap") == 1
    rc, out, err = run_cli(
        shipped_db, "leaderboard", "--judge", "gpt-4", "--bootstrap", "20", "--format", "csv"
    )
    table = pd.read_csv(io.StringIO(out))
    assert {"ci_low", "ci_high", "rank_low", "rank_high"} <= set(
        table.columns
    ) and "no --bootstrap" not in err
    assert table[["ci_low", "rank_low"]].notna().all().all()


def test_compare_names_rho_and_distance(shipped_db):
    from engine.ranking.reference import reference_for_dataset

    rc, out, err = run_cli(shipped_db, "compare", "--judge", "gpt-4", "--format", "csv")
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    rc2, out2, _ = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--format", "csv")
    board = pd.read_csv(io.StringIO(out2)).set_index("model")["score"]
    ref = reference_for_dataset("vicuna80")
    shared = [m for m in board.index if m in ref.index]
    rho = spearmanr(board[shared], ref[shared]).statistic  # scipy on the printed scores
    assert rc == rc2 == 0 and row["n_shared"] == len(shared)
    assert row["spearman_rho"] == pytest.approx(rho, abs=1e-9)
    assert row["spearman_distance"] == pytest.approx((1 - rho) / 2, abs=1e-9)
    assert "spearman" not in pd.read_csv(io.StringIO(out)).columns


def test_cli_default_judge_is_the_apps_first_view(shipped_db, shipped_store, monkeypatch):
    """Both pool all judges by default: the CLI's leaderboard equals the one the app opens on."""
    from streamlit.testing.v1 import AppTest

    from engine.store.datasets import dataset_choices

    default = dataset_choices(shipped_store, "vicuna80").default_judge
    rc, out, err = run_cli(shipped_db, "leaderboard", "--format", "csv")
    assert rc == 0 and "all 6 judges are pooled" in err and "as in the app's first view (all judges)" in err
    assert f"({default} covers the most models)" in err
    cli = pd.read_csv(io.StringIO(out)).set_index("model")
    monkeypatch.setenv("LENS_DB", str(shipped_db))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception and at.session_state["judge"] == "(all)"
    assert at.selectbox(key="judge").format_func("(all)") == "all judges (pooled)"
    app = at.dataframe[0].value.set_index("model")
    assert sorted(app.index) == sorted(cli.index)
    assert (
        app.loc[cli.index, ["wins", "losses", "ties"]].to_numpy()
        == cli[["wins", "losses", "ties"]].to_numpy()
    ).all()
    assert list(app.sort_values("score", ascending=False).index) == list(
        cli.sort_values("score", ascending=False).index
    )
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", default, "--format", "csv")
    assert "pooled" not in err


def _on_a_terminal(db, *args) -> str:
    """Run the CLI with stdout on a pseudo-terminal; return what the terminal showed."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "--db", str(db), *args], stdout=slave,
                            stderr=subprocess.DEVNULL, cwd=REPO, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(master)
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def test_long_tables_are_summarised_on_a_terminal_and_complete_as_csv(shipped_db):
    shown = _on_a_terminal(shipped_db, "graphs")  # 480 graphs: every judge of vicuna80
    lines = [ln for ln in shown.splitlines() if ln.strip()]
    assert any("440 of 480 rows not shown" in ln for ln in lines), shown[-500:]
    assert len(lines) == 1 + 40 + 1  # header, 30 + 10 rows, the summary line
    csv = _on_a_terminal(shipped_db, "graphs", "--format", "csv")
    assert len(pd.read_csv(io.StringIO(csv))) == 480
