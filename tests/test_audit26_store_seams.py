"""Seams between issue 26's merged store changes: the per-dataset summaries (migration 075) after the write
paths the summaries' own tests do not run (the Parquet import, plain and arena-shaped, and a judge run), and a
store written before migrations 075 and 076 opened by today's code (migrations applied, every row intact,
the same listing and board), also read-only, where the summaries table does not exist yet.

The second path each time: the old scan (``Store.datasets()`` plus a distinct-model query over the rows) and
the rows and boards read before the store was taken back to its old schema."""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import pandas as pd
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from seam_data import listing_by_scan

from engine.judging.persist import write_answers, write_prompts
from engine.store.connection import Store
from engine.store.datasets import dataset_listing
from engine.store.summaries import summaries

COUNTS = ("verdicts", "invalid", "judges", "prompts", "models", "battles")


def cli_listing(db: Path) -> dict[str, dict]:
    """``python -m engine datasets --format csv``: the summaries as a user reads them."""
    out = run_engine(["--db", str(db), "datasets", "--format", "csv"], check=True)
    frame = pd.read_csv(io.StringIO(out.stdout)).set_index("name")
    return {n: {k: int(r[k]) for k in COUNTS} for n, r in frame.iterrows()}


def arena_parquet(path: Path, n: int, shift: int = 0) -> Path:
    models = ["gpt-4", "claude-2", "llama-2-70b", "vicuna-13b", "mistral-7b"]
    pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "model_a": [models[(i + shift) % 5] for i in range(n)],
        "model_b": [models[(i + shift + 1 + i % 3) % 5] for i in range(n)],
        "winner": [("model_a", "model_b", "tie", "tie (bothbad)")[i % 4] for i in range(n)],
        "judge": [f"arena_user_{i % 7}" for i in range(n)],
        "turn": 1,
        "language": "English",
        "tstamp": [1.7e9 + i for i in range(n)],
    }).to_parquet(path)
    return path


def plain_parquet(path: Path) -> Path:
    pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p3", "p3"], "model_a": ["a", "a", "b", "c", "d"],
                  "model_b": ["b", "c", "c", "a", "e"], "winner": ["A", "B", "tie", "invalid", "A"],
                  "judge": ["j1", "j1", "j2", "j1", "j3"], "category": ["x", "x", "", "y", "y"]}
                 ).to_parquet(path)
    return path


def test_parquet_imports_and_a_judge_run_refresh_the_summaries(tmp_path):
    db = tmp_path / "lens.duckdb"
    run_engine(["--db", str(db), "import", str(plain_parquet(tmp_path / "p.parquet")), "--dataset", "p"],
               check=True)
    assert cli_listing(db) == listing_by_scan(db) and cli_listing(db)["p"]["models"] == 5
    run_engine(["--db", str(db), "import", str(arena_parquet(tmp_path / "a.parquet", 60)), "--dataset", "a",
                "--format", "arena"], check=True)
    assert cli_listing(db) == listing_by_scan(db)
    run_engine(["--db", str(db), "import", str(arena_parquet(tmp_path / "b.parquet", 9, shift=2)),
                "--dataset", "a", "--format", "arena", "--replace"], check=True)
    got = cli_listing(db)
    assert got == listing_by_scan(db) and got["a"]["verdicts"] == 9

    with Store(db) as store:  # prompts and answers of three models, then a judge run over them
        write_prompts(store, "p", pd.DataFrame({"prompt_id": ["p1", "p2"], "turn": 1, "category": "x",
                                                "text": ["first question", "second question"]}))
        write_answers(store, "p", pd.DataFrame(
            [{"prompt_id": p, "turn": 1, "model": m, "text": t} for p in ("p1", "p2")
             for m, t in (("a", "short"), ("b", "a longer answer " * 3), ("c", "longest answer " * 9))]))
    before = cli_listing(db)["p"]
    with FakeOpenAI() as srv:
        out = run_engine(["--db", str(db), "judge", "--dataset", "p", "--base-url", srv.base_url,
                          "--model", "fake-judge", "--api-key", "k", "--no-progress", "--concurrency", "1"])
    assert out.returncode == 0, out.stderr
    got = cli_listing(db)
    assert got == listing_by_scan(db)
    assert got["p"]["judges"] == before["judges"] + 1 and got["p"]["verdicts"] > before["verdicts"]


def rows(db: Path) -> pd.DataFrame:
    with Store(db) as s:
        return s.cursor().execute("SELECT * FROM verdicts ORDER BY ALL").df()


def board(db: Path, dataset: str) -> str:
    return run_engine(["--db", str(db), "leaderboard", "--dataset", dataset, "--bootstrap", "20", "--seed",
                       "1", "--format", "csv"], check=True).stdout


def take_back_to_074(db: Path) -> None:
    """The store as the code before issue 26 left it: no summaries table, the verdicts' ART index, and
    neither migration recorded (what an old store file holds)."""
    with Store(db) as s:
        con = s.cursor()
        con.execute("DROP TABLE dataset_summaries")
        con.execute("CREATE INDEX verdicts_dataset_idx ON verdicts(dataset, judge)")
        con.execute("DELETE FROM schema_migrations WHERE version IN (75, 76)")


def indexes(db: Path) -> list[str]:
    """The file's indexes, read without the store (which would migrate it)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()]
    finally:
        con.close()


def test_an_old_store_gets_migrations_075_and_076_with_its_data_intact(tmp_path):
    db = tmp_path / "old.duckdb"
    run_engine(["--db", str(db), "import", str(plain_parquet(tmp_path / "p.parquet")), "--dataset", "p"],
               check=True)
    run_engine(["--db", str(db), "import", str(arena_parquet(tmp_path / "a.parquet", 80)), "--dataset", "a",
                "--format", "arena"], check=True)
    want_rows, want_board, want_listing = rows(db), board(db, "a"), listing_by_scan(db)
    take_back_to_074(db)
    assert "verdicts_dataset_idx" in indexes(db)

    with Store(db, read_only=True) as ro:  # read-only: nothing migrates, the summaries are counted
        got = {n: {k: getattr(s, k) for k in COUNTS} for n, s in summaries(ro).items()}
        assert got == want_listing
        listed = dataset_listing(ro, models=True).set_index("name")
        assert {n: int(r["models"]) for n, r in listed.iterrows()} == {n: c["models"] for n, c in
                                                                       want_listing.items()}

    assert cli_listing(db) == want_listing  # the first writable open applies 075 and 076
    with Store(db) as s:
        done = {r[0] for r in s.cursor().execute("SELECT version FROM schema_migrations").fetchall()}
        assert {75, 76} <= done
        stored = s.cursor().execute("SELECT dataset FROM dataset_summaries ORDER BY 1").fetchall()
        assert [r[0] for r in stored] == sorted(want_listing)
    assert "verdicts_dataset_idx" not in indexes(db)
    pd.testing.assert_frame_equal(rows(db), want_rows)
    assert board(db, "a") == want_board
