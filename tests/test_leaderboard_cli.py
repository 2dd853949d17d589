"""The leaderboard service and the leaderboard/compare commands on the shipped vicuna80 store."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import choix
import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.cycles import cycle_counts
from engine.graphs import build_stack
from engine.leaderboard import leaderboard, leaderboard_from_stack
from engine.rankers import RANKERS


def run_cli(db, *args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(["--db", str(db), *args])
    return rc, out.getvalue(), err.getvalue()


def test_leaderboard_matches_choix_on_stored_verdicts(shipped_store):
    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4")
    v = shipped_store.verdicts("vicuna80", judge="gpt-4")
    st = build_stack(v)
    W, T = st.win_tie_matrices()
    ref = choix.ilsr_pairwise_dense(W + T / 2, tol=1e-12, max_iter=10_000)
    ref = pd.Series(ref - ref.mean(), index=list(st.models))
    np.testing.assert_allclose(board.scores.reindex(ref.index), ref, atol=1e-6)
    t = board.table.set_index("model")
    m = list(st.models)
    np.testing.assert_array_equal(t.loc[m, "wins"].to_numpy(), W.sum(1))
    np.testing.assert_array_equal(t.loc[m, "losses"].to_numpy(), W.sum(0))
    np.testing.assert_array_equal(t.loc[m, "ties"].to_numpy(), T.sum(1))
    assert board.params["judge"] == "gpt-4" and board.params["n_graphs"] == 80
    assert list(board.table["rank"]) == sorted(board.table["rank"])


def test_keep_k_ranks_exactly_the_k_lowest_scores(shipped_store):
    v = shipped_store.verdicts("vicuna80", judge="gpt-4")
    st = build_stack(v)
    board = leaderboard_from_stack(st, keep_k=30, mu=0.5)
    c = cycle_counts(st)
    s = c["c3_bad"].to_numpy() + 0.5 * c["c4_bad"].to_numpy()
    assert board.n_graphs == 30 and board.params["threshold"] == pytest.approx(np.sort(s)[29])
    pos = st.keys.reset_index().merge(board.kept, on=["judge", "prompt_id", "variant", "turn"])["index"]
    assert len(pos) == 30 and s[pos].max() <= np.sort(s)[29]
    assert (s[np.setdiff1d(np.arange(st.T), pos)] >= np.sort(s)[29]).all()
    # the ranking is the BT fit of exactly those graphs
    W, T = st.win_tie_matrices(pos.to_numpy())
    ref = choix.ilsr_pairwise_dense(W + T / 2, tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(board.scores.reindex(list(st.models)), ref - ref.mean(), atol=1e-6)


def test_every_ranker_runs_through_the_service(shipped_store):
    for name in RANKERS:
        board = leaderboard(shipped_store, "vicuna80", judge="claude", ranker=name)
        assert len(board.table) == 5 and board.table["score"].notna().all(), name


def test_cli_leaderboard_csv_with_bootstrap(shipped_db):
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--bootstrap", "50", "--seed", "3",
                           "--format", "csv")
    assert rc == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert list(df.columns[:10]) == ["rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high",
                                     "wins", "losses", "ties"]
    assert len(df) == 9 and (df["ci_low"] <= df["score"]).all() and (df["score"] <= df["ci_high"]).all()
    rc2, out2, _ = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--bootstrap", "50", "--seed", "3",
                           "--format", "csv")
    assert out2 == out


def test_cli_leaderboard_json_and_errors(shipped_db):
    rc, out, err = run_cli(shipped_db, "leaderboard", "--ranker", "davidson", "--judge", "bard", "--format", "json")
    obj = json.loads(out)
    assert rc == 0 and set(obj) == {"params", "details", "notes", "table"} and len(obj["table"]) == 5
    # the reported nu is the one of a direct Davidson fit on the judge's W and T
    from engine.rankers.davidson import fit_davidson
    from engine.store import Store

    store = Store(shipped_db)
    st = build_stack(store.verdicts("vicuna80", judge="bard"))
    store.close()
    W, T = st.win_tie_matrices()
    assert obj["details"]["nu"] == pytest.approx(fit_davidson(W, T, st.models).details["nu"], rel=1e-9)
    assert any(n.startswith("davidson: tie parameter nu = ") for n in obj["notes"]) and err == ""
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "nobody", "--format", "csv")
    assert rc == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1
    rc, _, err = run_cli(shipped_db, "leaderboard", "--keep-k", "0", "--format", "csv")
    assert rc == 2 and "K must be" in err
    rc, _, err = run_cli(shipped_db, "leaderboard", "--param", "solver", "--format", "csv")
    assert rc == 2 and "key=value" in err


def test_cli_compare_per_judge(shipped_db):
    rc, out, err = run_cli(shipped_db, "compare", "--per-judge", "--ranker", "bt", "--format", "csv")
    assert rc == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert set(df["judge"]) == {"bard", "claude", "gpt-3.5-turbo", "gpt-4", "human", "vicuna-13b"}
    assert ((df[["spearman", "kendall", "footrule", "chebyshev"]] >= 0).all().all())
    assert ((df[["spearman", "kendall", "footrule", "chebyshev"]] <= 1).all().all())
    assert set(df["n_shared"]) <= {5, 6}
    rc, _, err = run_cli(shipped_db, "compare", "--reference-category", "nope", "--format", "csv")
    assert rc == 2 and "no category 'nope'" in err


def test_cli_csv_stays_clean_and_notes_go_to_stderr(shipped_db):
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--keep-k", "1", "--format", "csv")
    assert rc == 0
    lines = out.strip().split("\n")
    assert lines[0].startswith("rank,model,score") and len(lines) == 1 + 5  # header + rows only
    ranks = pd.read_csv(io.StringIO(out))["rank"].tolist()
    assert ranks == sorted(ranks) and ranks[0] == 1
    notes = err.strip().split("\n")
    assert notes[0].startswith("note: keep-K: ranked the 1 graph(s) of smallest S_mu") and "out of 80" in notes[0]
    assert notes[1].startswith("note: bt: the MLE does not exist") and "virtual tie" in notes[1]
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "human", "--ranker", "copeland", "--format", "table")
    assert rc == 0 and "note:" not in out
    assert "copeland: 4 pair(s) of models were never compared" in err  # claude met 4 of the 8 others
    rc, _, err = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--ranker", "elo", "--format", "csv")
    assert "elo: K = 4" in err and "order: graphs sorted by key" in err
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--ranker", "kemeny", "--format", "json")
    obj = json.loads(out)
    assert obj["details"]["exact"] is True and any(n.startswith("kemeny: exact") for n in obj["notes"])


def test_rank_and_compare_follow_a_rankers_stated_order(shipped_db, shipped_store):
    from engine.distances import all_distances
    from engine.rankers import rank
    from engine.reference import reference_for_dataset

    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    for params in ({"mode": "global"}, {}):
        res = rank(st, "pged", **params)
        board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="pged", ranker_params=params)
        order = res.extras["order"]
        assert board.table["model"].tolist() == order and board.table["rank"].tolist() == list(range(1, 10))
    # compare uses those ranks (global mode: descendant ties broken by name)
    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="pged", ranker_params={"mode": "global"})
    ref = reference_for_dataset("vicuna80")
    pos = {m: k + 1 for k, m in enumerate(rank(st, "pged", mode="global").extras["order"])}
    shared = [m for m in pos if m in ref.index]
    expect = all_distances(pd.Series({m: pos[m] for m in shared}), ref.rank(ascending=False)[shared])
    rc, out, err = run_cli(shipped_db, "compare", "--judge", "gpt-4", "--ranker", "pged", "--param", "mode=global",
                           "--format", "csv")
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    for k in ("spearman", "kendall", "footrule", "chebyshev"):
        assert row[k] == pytest.approx(expect[k])
    assert board.table.set_index("model")["rank"].to_dict() == pos


def test_show_kept_lists_the_kept_graphs_in_keep_order_with_the_threshold(shipped_db, shipped_store):
    """--show-kept prints the K graphs of smallest S_mu (ties by graph key), checked by a direct sort."""
    from engine.cycles import cycle_counts

    rc, out, err = run_cli(
        shipped_db, "leaderboard", "--judge", "gpt-4", "--keep-k", "12", "--mu", "0.5", "--show-kept", "--format", "csv"
    )
    assert rc == 0
    kept = pd.read_csv(io.StringIO(out), dtype={"prompt_id": str})
    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    counts = cycle_counts(st)
    direct = st.keys[["prompt_id"]].copy()
    direct["score"] = counts["c3_bad"].to_numpy() + 0.5 * counts["c4_bad"].to_numpy()
    direct["pid"] = direct["prompt_id"].astype(int)  # vicuna80 ids are numbers: natural key order
    direct = direct.sort_values(["score", "pid"], kind="stable").head(12)
    assert kept["prompt_id"].tolist() == direct["prompt_id"].tolist()
    assert kept["score"].tolist() == direct["score"].tolist()
    assert kept["keep_rank"].tolist() == list(range(1, 13))
    threshold = float(direct["score"].iloc[-1])
    assert f"threshold S_K = {threshold:.4g}" in err
    rc, out, _ = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--keep-k", "12", "--mu", "0.5", "--format", "json")
    obj = json.loads(out)
    assert [row["prompt_id"] for row in obj["kept"]] == direct["prompt_id"].tolist()
    assert obj["params"]["threshold"] == threshold and obj["params"]["pool"] == "perturbed"
    rc, _, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--show-kept")
    assert rc == 2 and "give --keep-k" in err
