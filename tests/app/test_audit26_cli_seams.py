"""Seams between issue 26's merged parts, as a user crosses them: what a page shows equals what the command
line prints for the same choice.

- The Leaderboard's deferred bootstrap (the point board first, the intervals from a worker thread) against
  ``python -m engine leaderboard --bootstrap 200 --seed 0``: the same scores, intervals and rank intervals,
  also after the ranker or the judge was changed while an earlier choice's intervals were still computing
  (the intervals shown must be the current choice's, never the previous one's).
- The Truncation page's slider fragment against ``leaderboard --keep-k K --mu M --bootstrap 200 --seed 0``,
  also after the sidebar's judge was changed and a slider moved (the numbers must be the new judge's).

The command line is the second path: its own process entry (``run_engine``), its own reads and fits; its CSV
read back with round-trip float parsing, so "equal" means the same floats.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from apphelpers import assert_clean, new_app
from conftest import run_engine

from app_pages._lens import B_DEFAULT, SEED
from engine.views.leaderboard_view import PENDING, board_view

NUMBERS = ["model", "score", "ci_low", "ci_high", "rank_low", "rank_high"]
SHOWN = ["rank", "model", "score", "interval", "votes", "rank_ub", "rank_range", "wins", "losses", "ties"]


def cli_board(db, *args: str) -> pd.DataFrame:
    """``leaderboard ARGS --bootstrap B --seed SEED --format csv`` as the command line prints it."""
    got = run_engine(["--db", str(db), "leaderboard", "--dataset", "vicuna80", *args,
                      "--bootstrap", str(B_DEFAULT), "--seed", str(SEED), "--format", "csv"], check=True)
    return pd.read_csv(io.StringIO(got.stdout))


def finish_jobs() -> list:
    """Wait for every bootstrap job the page started; their boards."""
    from app_pages._lbopen_cache import _jobs

    return [job.result(timeout=180) for job in list(_jobs().jobs.values())]


def assert_page_shows(at, cli: pd.DataFrame, ranker: str) -> None:
    """The page's table equals the CLI's board passed through the page's own view (columns the CLI
    prints), and no cell says its interval is still being computed."""
    assert_clean(at)
    shown = at.dataframe[0].value.reset_index(drop=True)
    assert not shown.astype(str).isin([PENDING]).any().any()
    want = board_view(cli, ranker=ranker, n_graphs=80).frame.reset_index(drop=True)
    cols = [c for c in SHOWN if c in shown.columns and c in want.columns]
    assert {"interval", "rank_range", "score"} <= set(cols)
    pd.testing.assert_frame_equal(shown[cols], want[cols], check_exact=True, check_dtype=False)


def deferred_app(shipped_db, monkeypatch):
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)  # vicuna80 is small: defer it anyway
    return new_app(shipped_db, monkeypatch)


@pytest.mark.parametrize("judge, ranker", [(None, "bt"), ("gpt-4", "elo"), ("gpt-4", "davidson")])
def test_deferred_bootstrap_equals_the_cli(shipped_db_copy, monkeypatch, judge, ranker):
    shipped_db = shipped_db_copy  # its own copy: the bootstrap job keeps boards in the store it ran on
    at = deferred_app(shipped_db, monkeypatch)
    if judge:
        at.selectbox(key="judge").set_value(judge)
    at.selectbox(key="ranker").set_value(ranker).run()
    boards = finish_jobs()
    at.run()
    cli = cli_board(shipped_db, "--ranker", ranker, *(["--judge", judge] if judge else []))
    assert_page_shows(at, cli, ranker)
    # the job's own numbers (before any formatting) are the CLI's floats
    job = next(b.table for b in boards if set(b.table["model"]) == set(cli["model"])
               and b.table["score"].tolist() == cli["score"].tolist())
    pd.testing.assert_frame_equal(job[NUMBERS].reset_index(drop=True), cli[NUMBERS], check_exact=True,
                                  check_dtype=False)


def test_intervals_shown_belong_to_the_current_choice(shipped_db_copy, monkeypatch):
    """Judge gpt-4 with bt, then judge claude, then (bt's intervals still computing or not) ranker elo:
    once every job is done the page shows the last choice's intervals, the CLI's for claude / elo."""
    shipped_db = shipped_db_copy  # its own copy: the bootstrap job keeps boards in the store it ran on
    at = deferred_app(shipped_db, monkeypatch)
    at.selectbox(key="judge").set_value("gpt-4").run()
    at.selectbox(key="judge").set_value("claude").run()
    at.selectbox(key="ranker").set_value("elo").run()
    shown = at.dataframe[0].value
    pending = shown["interval"].astype(str).eq(PENDING).all()
    cli = cli_board(shipped_db, "--ranker", "elo", "--judge", "claude")
    if not pending:  # already done: it must be this choice's board already
        assert_page_shows(at, cli, "elo")
    finish_jobs()
    at.run()
    assert_page_shows(at, cli, "elo")


def test_truncation_fragment_equals_the_cli(shipped_db, monkeypatch):
    """Pooled judges first; then the sidebar's judge is set to gpt-4 and the sliders moved: the table is
    the CLI's ``--judge gpt-4 --keep-k K --mu M`` board (the kept board's columns); then the sliders moved
    again (one app for both choices: a new app per choice repeated the first four runs)."""
    at = new_app(shipped_db, monkeypatch, "app_pages/2_truncation.py")
    at.slider(key="keep_k").set_value(30).run()  # a move on the pooled selection first
    at.selectbox(key="judge").set_value("gpt-4").run()
    for k, mu in [(40, 1.0), (17, 0.1)]:
        at.slider(key="keep_k").set_value(k).run()
        at.select_slider(key="mu").set_value(mu).run()
        assert_clean(at)
        shown = at.dataframe[0].value.reset_index(drop=True)
        cli = cli_board(shipped_db, "--judge", "gpt-4", "--keep-k", str(k), "--mu", f"{mu:g}")
        cols = [c for c in cli.columns if c in shown.columns]
        assert {"model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "votes"} <= set(cols)
        pd.testing.assert_frame_equal(shown[cols], cli[cols], check_exact=True, check_dtype=False)
