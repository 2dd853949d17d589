"""Defects the issue-25 audit found with the product used as a new user would (docs/notes/audit-25.md).

Each test runs the command a user runs on the shipped data and checks its answer against a number
computed another way (pandas over the shipped file, a plain name comparison).
"""

from __future__ import annotations

import io
import unicodedata

import pandas as pd
from conftest import run_engine

from engine.ingest.shipped_counts import ARENA_COUNTS_DATASET, ARENA_COUNTS_FILE
from engine.ranking.reference import load_reference


def _key(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", name).casefold() if c.isalnum())


def test_compare_places_the_arena_counts_names_on_the_reference(shipped_db):
    """The shipped Chatbot Arena pair counts use LMArena's own names, yet ``compare`` refused with
    "Fewer than two models ... appear in the reference": the dataset's model list was read from the
    verdicts table only, and a pair-count dataset has none (so the Leaderboard had no reference columns
    either). The shared count must be the names whose normalised form one reference name has."""
    counts = pd.read_csv(ARENA_COUNTS_FILE)
    names = set(counts["model_a"]) | set(counts["model_b"])
    ref_keys = pd.Series([_key(n) for n in load_reference().index]).value_counts()
    own_keys = pd.Series([_key(n) for n in names]).value_counts()
    want = sum(1 for n in names if ref_keys.get(_key(n), 0) == 1 and own_keys[_key(n)] == 1)
    assert want > 100  # the check itself: most of the 129 names are LMArena's
    res = run_engine(["--db", shipped_db, "compare", "--dataset", ARENA_COUNTS_DATASET, "--format", "csv"])
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(io.StringIO(res.stdout))
    assert table["n_shared"].tolist() == [want]


def test_datasets_lists_the_arena_counts_models(shipped_db):
    """``datasets`` listed the shipped Chatbot Arena pair counts with 0 models (from verdicts only)."""
    counts = pd.read_csv(ARENA_COUNTS_FILE)
    res = run_engine(["--db", shipped_db, "datasets", "--format", "csv"])
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(io.StringIO(res.stdout)).set_index("name")
    assert table.loc[ARENA_COUNTS_DATASET, "models"] == len(set(counts["model_a"]) | set(counts["model_b"]))
    assert table.loc["vicuna80", "models"] == 9



def test_the_arena_counts_export_and_import_back(shipped_db, tmp_path):
    """``datasets export`` refused the shipped pair counts ("this analysis needs per-prompt graphs"): a
    dataset could not be taken out of the store. The file written must hold the shipped file's counts and
    import back as the same pair counts."""
    from engine.store.connection import Store
    from engine.store.pair_counts import pair_count_rows

    out = tmp_path / "arena_counts.csv"
    res = run_engine(["--db", shipped_db, "datasets", "export", ARENA_COUNTS_DATASET, out])
    assert res.returncode == 0, res.stderr
    cols = ["model_a", "model_b", "wins_a", "wins_b", "ties", "both_bad"]
    want = pd.read_csv(ARENA_COUNTS_FILE)[cols].sort_values(["model_a", "model_b"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.read_csv(out)[cols], want)
    db = tmp_path / "back.duckdb"
    res = run_engine(["--db", db, "import", "--dataset", "back", out])
    assert res.returncode == 0, res.stderr
    with Store(db) as store:
        back = pair_count_rows(store, "back")
    pd.testing.assert_frame_equal(back[cols].astype(want.dtypes.to_dict()), want)


def test_compare_on_the_arena_counts_names_its_unit_battles(shipped_db):
    """The unit note of ``compare`` on the pair counts read "bt ranked graph edges (... one per pair and
    graph)": a pair-count board ranks battles (its params say unit 'battles') and has no graph."""
    res = run_engine(["--db", shipped_db, "compare", "--dataset", ARENA_COUNTS_DATASET, "--format", "csv"])
    assert res.returncode == 0, res.stderr
    unit = [line for line in res.stderr.splitlines() if line.startswith("note: unit:")]
    assert unit == ["note: unit: bt ranked battles (battles: the pair counts of the dataset)."]


def test_experiment_on_the_arena_counts_refuses_in_one_sentence(shipped_db):
    """``experiment baselines --reference arena`` on the pair counts ended in a traceback ("No objects to
    concatenate": the dataset has no judge, so no frame); now the one no-prompts sentence, exit 2."""
    for experiment in ("baselines", "keep-k", "mu"):
        res = run_engine(["--db", shipped_db, "experiment", experiment, "--dataset", ARENA_COUNTS_DATASET,
                          "--reference", "arena"])
        assert res.returncode == 2, (experiment, res.stderr[-300:])
        assert "Traceback" not in res.stderr
        assert res.stderr.strip().splitlines() == [
            f"error: Dataset '{ARENA_COUNTS_DATASET}' holds pair counts (outcomes summed per model pair), "
            f"not prompts: experiment {experiment} needs per-prompt graphs; the count rankers and diagnose "
            "--table majority work on it."]
