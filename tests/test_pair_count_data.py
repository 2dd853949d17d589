"""Pair counts as data (issue 25, point 7): a file of ``model_a, model_b, wins_a, wins_b, ties[, both_bad]``
imports as a dataset of counts and feeds the count path.

The second path is the battle log the counts sum: every battle written out as one verdict of its own
prompt (``winner`` A / B / tie; a both-bad tie as a tie), imported as verdicts and ranked on the
ordinary count path. Scores, bootstrap intervals (one multinomial over all battles = the ``vote``
bootstrap of the log, same seed) and sandwich intervals must agree exactly, whichever way the rows list
their pairs. Bad files are refused in one sentence naming the file and row, with nothing stored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.ingest.importer import store_report, validate_file
from engine.ingest.pair_count_files import import_pair_counts, is_pair_count_file, read_pair_count_files
from engine.ranking.count_bootstrap import CountedBattles, compact_patterns
from engine.ranking.leaderboard import leaderboard
from engine.ranking.pair_count_board import stored_pair_counts
from engine.store.pair_counts import is_pair_count_dataset

SCORE_COLUMNS = ["model", "rank", "score", "wins", "losses", "ties", "votes"]


def random_counts(seed: int, n_models: int = 6, density: float = 0.7) -> pd.DataFrame:
    """Pair rows in random orientation, some pairs listed twice, both-bad ties, a zero row."""
    rng = np.random.default_rng(seed)
    models = [f"model-{i}" for i in range(n_models)]
    rows = []
    for i in range(n_models):
        for j in range(i + 1, n_models):
            if rng.random() > density and j != i + 1:  # keep a chain: one component
                continue
            for _ in range(1 + int(rng.random() < 0.2)):
                a, b = (models[i], models[j]) if rng.random() < 0.5 else (models[j], models[i])
                rows.append({"model_a": a, "model_b": b, "wins_a": int(rng.integers(0, 9)),
                             "wins_b": int(rng.integers(0, 9)), "ties": int(rng.integers(0, 4)),
                             "both_bad": int(rng.integers(0, 3))})
    rows.append({"model_a": models[0], "model_b": "no-battle", "wins_a": 0, "wins_b": 0, "ties": 0,
                 "both_bad": 0})
    return pd.DataFrame(rows)


def battle_log(counts: pd.DataFrame) -> pd.DataFrame:
    """The battles the counts sum, one verdict per battle, each its own prompt."""
    out = []
    for r in counts.itertuples(index=False):
        for winner, k in (("A", r.wins_a), ("B", r.wins_b), ("tie", r.ties + r.both_bad)):
            out += [(r.model_a, r.model_b, winner)] * int(k)
    log = pd.DataFrame(out, columns=["model_a", "model_b", "winner"])
    return log.assign(prompt_id=[f"q{i}" for i in range(len(log))], judge="human")


def both_paths(tmp_path, empty_store, counts: pd.DataFrame, suffix: str = "csv"):
    """Import the counts as pair counts (dataset ``pc``) and their battle log as verdicts (``log``)."""
    path = tmp_path / f"counts.{suffix}"
    {"csv": lambda p: counts.to_csv(p, index=False), "parquet": lambda p: counts.to_parquet(p),
     "jsonl": lambda p: counts.to_json(p, orient="records", lines=True)}[suffix](path)
    import_pair_counts(empty_store, [path], "pc")
    log_path = tmp_path / "log.csv"
    battle_log(counts).to_csv(log_path, index=False)
    res = store_report(empty_store, validate_file(log_path, dataset="log"), "log")
    assert res.status == "stored"
    return empty_store


def test_containers_read_alike(tmp_path):
    """CSV, Parquet and JSON Lines of the same rows give the same pairs."""
    counts = random_counts(4)
    counts.to_csv(tmp_path / "c.csv", index=False)
    counts.to_parquet(tmp_path / "c.parquet")
    counts.to_json(tmp_path / "c.jsonl", orient="records", lines=True)
    got = [read_pair_count_files([tmp_path / f"c.{s}"]).pairs for s in ("csv", "parquet", "jsonl")]
    pd.testing.assert_frame_equal(got[0], got[1])
    pd.testing.assert_frame_equal(got[0], got[2])


def test_counts_rank_as_their_battle_log(tmp_path, empty_store):
    """Every count ranker gives the same board on the counts as on the battle log they sum."""
    store = both_paths(tmp_path, empty_store, random_counts(3), "parquet")
    for ranker in ("bt", "davidson", "winrate", "copeland", "rank-centrality", "majority"):
        a = leaderboard(store, "pc", ranker=ranker).table[SCORE_COLUMNS]
        b = leaderboard(store, "log", ranker=ranker).table[SCORE_COLUMNS]
        pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9, obj=ranker)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_bootstrap_is_the_log_vote_bootstrap(tmp_path_factory, migrated_empty_db, seed):
    """The bootstrap on counts resamples battles: with the same seed its intervals equal the vote bootstrap
    of the battle log (the same multinomial, cell for cell), for a batched and a pair-list ranker."""
    import shutil

    from engine.store.connection import Store

    tmp = tmp_path_factory.mktemp("boot")
    shutil.copy(migrated_empty_db, tmp / "lens.duckdb")
    store = Store(tmp / "lens.duckdb")
    try:
        both_paths(tmp, store, random_counts(seed, n_models=5))
        for ranker in ("bt", "winrate"):
            a = leaderboard(store, "pc", ranker=ranker, bootstrap=40, seed=seed)
            b = leaderboard(store, "log", ranker=ranker, bootstrap=40, seed=seed, bootstrap_unit="vote")
            cols = ["model", "ci_low", "ci_high", "rank_low", "rank_high"]
            pd.testing.assert_frame_equal(a.table[cols], b.table[cols], check_dtype=False, rtol=1e-9)
            assert a.params["bootstrap_unit"] == "vote"
    finally:
        store.close()


def test_counted_cells_are_the_log_cells(tmp_path, empty_store):
    """The bootstrap's multinomial: cells (pair, outcome) and their battle counts, as the log's votes give."""
    from engine.rankers.votes import votes
    from engine.ranking.vote_query import store_vote_rows

    store = both_paths(tmp_path, empty_store, random_counts(11))
    _, mult_c, cols_c = compact_patterns(CountedBattles(stored_pair_counts(store, "pc")), "vote")
    _, mult_v, cols_v = compact_patterns(votes(store_vote_rows(store, "log")), "vote")
    np.testing.assert_array_equal(cols_c, cols_v)
    np.testing.assert_array_equal(mult_c, mult_v)
    assert len(CountedBattles(stored_pair_counts(store, "pc"))) == int(mult_v.sum())


def test_sandwich_on_counts_equals_the_log(tmp_path, empty_store):
    store = both_paths(tmp_path, empty_store, random_counts(5))
    a = leaderboard(store, "pc", ranker="bt", ci="sandwich").table
    b = leaderboard(store, "log", ranker="bt", ci="sandwich").table
    pd.testing.assert_frame_equal(a[["model", "ci_low", "ci_high"]], b[["model", "ci_low", "ci_high"]],
                                  check_dtype=False, rtol=1e-7)


def test_two_models_closed_form(tmp_path, empty_store):
    """Half-tie BT on one pair: the score gap is log(W~_ab / W~_ba)."""
    path = tmp_path / "two.csv"
    pd.DataFrame({"model_a": ["b", "a"], "model_b": ["a", "b"], "wins_a": [3, 10], "wins_b": [2, 4],
                  "ties": [1, 2], "both_bad": [0, 1]}).to_csv(path, index=False)
    import_pair_counts(empty_store, [path], "two")
    t = leaderboard(empty_store, "two", ranker="bt").table.set_index("model")
    # a: 10 + 2 = 12 wins, b: 4 + 3 = 7 wins, ties 1 + 2 + 1 = 4
    assert t.loc["a", "score"] - t.loc["b", "score"] == pytest.approx(np.log((12 + 2) / (7 + 2)), abs=1e-6)
    assert t.loc["a", "votes"] == 23


def test_repeated_pairs_add_and_empty_pairs_leave(tmp_path):
    counts = random_counts(7)
    path = tmp_path / "c.csv"
    counts.to_csv(path, index=False)
    got = read_pair_count_files([path])
    lo = counts[["model_a", "model_b"]].min(axis=1)
    flip = counts["model_a"] != lo
    brute = pd.DataFrame({"model_a": lo, "model_b": counts[["model_a", "model_b"]].max(axis=1),
                          "wins_a": np.where(flip, counts["wins_b"], counts["wins_a"]),
                          "wins_b": np.where(flip, counts["wins_a"], counts["wins_b"]),
                          "ties": counts["ties"], "both_bad": counts["both_bad"]})
    brute = brute.groupby(["model_a", "model_b"], as_index=False).sum()
    brute = brute[brute[["wins_a", "wins_b", "ties", "both_bad"]].sum(axis=1) > 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.pairs, brute, check_dtype=False)
    n_pairs = counts.assign(a=lo, b=counts[["model_a", "model_b"]].max(axis=1)).groupby(["a", "b"]).ngroups
    assert got.rows_merged == len(counts) - n_pairs
    assert got.rows_empty == 1 and "no-battle" not in set(got.pairs["model_b"])
    assert got.n_battles == int(counts[["wins_a", "wins_b", "ties", "both_bad"]].to_numpy().sum())


BAD = {
    "negative count": ("x,y,3,-1,0", "row 2 has wins_b that is not a whole number"),
    "fraction": ("x,y,3,1.5,0", "row 2 has wins_b that is not a whole number"),
    "not a number": ("x,y,3,1,many", "row 2 has ties that is not a whole number"),
    "self pair": ("x,x,3,1,0", "row 2 compares a model with itself ('x')"),
    "no model": (",y,3,1,0", "row 2 has no model_a"),
    "look-alike name": ("x,\u0430lpha,3,1,0", "row 2 names the model"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_rows_refused_whole(tmp_path, empty_store, case):
    line, words = BAD[case]
    path = tmp_path / "bad.csv"
    path.write_text(f"model_a,model_b,wins_a,wins_b,ties\nx,y,1,2,0\n{line}\n", encoding="utf-8")
    with pytest.raises(LensError) as err:
        import_pair_counts(empty_store, [path], "bad")
    msg = str(err.value)
    assert words in msg and str(path) in msg and msg.count(". ") == 0
    assert not empty_store.has_dataset("bad")


def test_missing_column_and_detection(tmp_path, empty_store):
    path = tmp_path / "c.csv"
    path.write_text("Model_A, model_b ,WINS_A,wins_b\nx,y,1,2\n", encoding="utf-8")
    assert not is_pair_count_file(path)
    with pytest.raises(LensError, match="has no column ties"):
        import_pair_counts(empty_store, [path], "c")
    path.write_text("Model_A, model_b ,WINS_A,wins_b,Ties,note\nx,y,1,2,0,hi\n", encoding="utf-8")
    assert is_pair_count_file(path)
    got = import_pair_counts(empty_store, [path], "c")
    assert got.table.not_read == ("note",) and is_pair_count_dataset(empty_store, "c")


def test_existing_dataset_needs_replace_and_rename_delete_move_counts(tmp_path, empty_store):
    from engine.ingest.importer import delete_dataset, rename_dataset

    path = tmp_path / "c.csv"
    random_counts(2).to_csv(path, index=False)
    import_pair_counts(empty_store, [path], "c")
    with pytest.raises(LensError, match="already exists"):
        import_pair_counts(empty_store, [path], "c")
    assert import_pair_counts(empty_store, [path], "c", replace=True).revision == 2
    rename_dataset(empty_store, "c", "d")
    assert is_pair_count_dataset(empty_store, "d") and not empty_store.has_dataset("c")
    delete_dataset(empty_store, "d")
    assert int(empty_store.cursor().execute("SELECT count(*) FROM pair_counts").fetchone()[0]) == 0


def test_per_prompt_analyses_say_no_prompts(tmp_path, empty_store):
    path = tmp_path / "c.csv"
    random_counts(2).to_csv(path, index=False)
    import_pair_counts(empty_store, [path], "c")
    for call in (lambda: empty_store.verdicts("c"), lambda: leaderboard(empty_store, "c", ranker="pged"),
                 lambda: leaderboard(empty_store, "c", keep_k=3)):
        with pytest.raises(LensError, match="holds pair counts .* not prompts"):
            call()
    with pytest.raises(LensError, match="no battle order"):
        leaderboard(empty_store, "c", ranker="elo")
    with pytest.raises(LensError, match="no prompts|no graphs"):
        leaderboard(empty_store, "c", bootstrap=5, bootstrap_unit="prompt")
