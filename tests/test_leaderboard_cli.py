"""The leaderboard service and the leaderboard/compare commands on the shipped vicuna80 store."""

from __future__ import annotations

import io
import json

import choix
import numpy as np
import pandas as pd
import pytest
from cli_inprocess import run_engine

from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.rankers import RANKERS, ranker_object
from engine.ranking.leaderboard import leaderboard, leaderboard_from_stack


def run_cli(db, *args):
    """``python -m engine --db DB ARGS`` (in this process): exit code, stdout, stderr."""
    done = run_engine(["--db", db, *args])
    return done.returncode, done.stdout, done.stderr


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
    assert list(df.columns[:11]) == ["rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high",
                                     "rank_ub", "wins", "losses", "ties"]
    assert len(df) == 9 and (df["ci_low"] <= df["score"]).all() and (df["score"] <= df["ci_high"]).all()
    rc2, out2, _ = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--bootstrap", "50", "--seed", "3",
                           "--format", "csv")
    assert out2 == out


def test_cli_leaderboard_json_and_errors(shipped_db):
    rc, out, err = run_cli(
        shipped_db, "leaderboard", "--ranker", "davidson", "--judge", "bard", "--format", "json"
    )
    obj = json.loads(out)
    assert rc == 0 and set(obj) == {"params", "details", "notes", "table"} and len(obj["table"]) == 5
    # the reported nu is the one of a direct Davidson fit on the judge's W and T
    from engine.rankers.davidson import fit_davidson
    from engine.store.connection import Store

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
    assert ((df[["spearman_distance", "kendall", "footrule", "chebyshev"]] >= 0).all().all())
    assert ((df[["spearman_distance", "kendall", "footrule", "chebyshev"]] <= 1).all().all())
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
    assert (
        notes[0].startswith("note: keep-K: ranked the 1 graph(s) of smallest truncation score (S_mu")
        and "out of 80" in notes[0]
    )
    assert notes[1].startswith("note: bt: the MLE does not exist") and "virtual tie" in notes[1]
    rc, out, err = run_cli(
        shipped_db, "leaderboard", "--judge", "human", "--ranker", "copeland", "--format", "table"
    )
    assert rc == 0 and "note:" not in out
    assert "copeland: 4 pair(s) of models were never compared" in err  # claude met 4 of the 8 others
    rc, _, err = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--ranker", "elo", "--format", "csv")
    assert "elo: K = 4" in err and "order: source order (file, line)" in err  # no timestamps: source order
    rc, _, err = run_cli(
        shipped_db,
        "leaderboard",
        "--judge",
        "claude",
        "--ranker",
        "elo",
        "--param",
        "order=prompt",
        "--format",
        "csv",
    )
    assert rc == 0 and "order: graph key, then model pair" in err
    rc, out, err = run_cli(
        shipped_db, "leaderboard", "--judge", "claude", "--ranker", "kemeny", "--format", "json"
    )
    obj = json.loads(out)
    assert obj["details"]["exact"] is True and any(n.startswith("kemeny: exact") for n in obj["notes"])


def test_rank_and_compare_follow_a_rankers_stated_order(shipped_db, shipped_store):
    """The board lists PGED's order and ranks by its scores: equal scores share a rank (never split by
    name, issue 23); compare's distances use those shared ranks."""
    from engine.rankers import rank
    from engine.ranking.distances import all_distances
    from engine.ranking.reference import reference_for_dataset

    def shared_ranks(scores: pd.Series) -> dict:
        return {m: 1 + int((scores > s + 1e-9).sum()) for m, s in scores.items()}

    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    for params in ({"mode": "global"}, {}):
        res = rank(st, "pged", **params)
        board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="pged", ranker_params=params)
        assert board.table["model"].tolist() == res.extras["order"]
        assert board.table.set_index("model")["rank"].to_dict() == shared_ranks(res.scores)
    # compare uses those ranks (global mode: descendant ties shared)
    board = leaderboard(
        shipped_store, "vicuna80", judge="gpt-4", ranker="pged", ranker_params={"mode": "global"}
    )
    ref = reference_for_dataset("vicuna80")
    pos = shared_ranks(rank(st, "pged", mode="global").scores)
    assert len(set(pos.values())) < len(pos)  # some scores are equal here, so sharing is exercised
    shared = [m for m in pos if m in ref.index]
    expect = all_distances(pd.Series({m: pos[m] for m in shared}), ref.rank(ascending=False)[shared])
    rc, out, err = run_cli(
        shipped_db,
        "compare",
        "--judge",
        "gpt-4",
        "--ranker",
        "pged",
        "--param",
        "mode=global",
        "--format",
        "csv",
    )
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    for k in ("spearman", "kendall", "footrule", "chebyshev"):
        assert row["spearman_distance" if k == "spearman" else k] == pytest.approx(expect[k])
    assert row["spearman_rho"] == pytest.approx(1 - 2 * expect["spearman"])
    assert board.table.set_index("model")["rank"].to_dict() == pos


def test_show_kept_lists_the_kept_graphs_in_keep_order_with_the_threshold(shipped_db, shipped_store):
    """--show-kept prints the K graphs of smallest S_mu (ties by graph key), checked by a direct sort."""
    from engine.graphs.cycles import cycle_counts

    rc, out, err = run_cli(
        shipped_db,
        "leaderboard",
        "--judge",
        "gpt-4",
        "--keep-k",
        "12",
        "--mu",
        "0.5",
        "--show-kept",
        "--format",
        "csv",
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
    rc, out, _ = run_cli(
        shipped_db, "leaderboard", "--judge", "gpt-4", "--keep-k", "12", "--mu", "0.5", "--format", "json"
    )
    obj = json.loads(out)
    assert [row["prompt_id"] for row in obj["kept"]] == direct["prompt_id"].tolist()
    assert obj["params"]["threshold"] == threshold and obj["params"]["pool"] == "perturbed"
    rc, _, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--show-kept")
    assert rc == 2 and "give --keep-k" in err


# ----------------------------------------------------------------------------- audit round 3


def test_keep_k_leaves_models_without_kept_comparisons_off_the_board(shipped_db, shipped_store):
    """Every judge pooled, K = 10: the ten kept graphs hold no guanaco comparison (5-model judges),
    so the guanacos are dropped (and said so) and BT is the choix fit of the compared models alone."""
    board = leaderboard(shipped_store, "vicuna80", keep_k=10)
    v = shipped_store.verdicts("vicuna80")
    kept = board.kept[["judge", "prompt_id", "variant", "turn"]].astype(str)
    vv = v.assign(**{c: v[c].astype(str) for c in ("judge", "prompt_id", "variant", "turn")})
    rows = vv.merge(kept, on=["judge", "prompt_id", "variant", "turn"])
    rows = rows[rows["winner"] != "invalid"]
    compared = sorted(set(rows["model_a"]) | set(rows["model_b"]))
    assert sorted(board.table["model"]) == compared and len(compared) == 5
    dropped = sorted((set(v["model_a"]) | set(v["model_b"])) - set(compared))
    assert sorted(board.params["dropped_models"]) == dropped == ["guanaco-13b", "guanaco-33b", "guanaco-65b",
                                                                 "guanaco-7b"]
    st = build_stack(rows)
    W, T = st.win_tie_matrices()
    ref = choix.ilsr_pairwise_dense(W + T / 2, tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(board.scores.reindex(list(st.models)), ref - ref.mean(), atol=1e-6)
    assert (board.table["n_graphs_model"] > 0).all()
    rc, out, err = run_cli(shipped_db, "leaderboard", "--keep-k", "10", "--format", "json")
    obj = json.loads(out)
    assert rc == 0 and len(obj["table"]) == 5
    assert any(
        "guanaco-13b, guanaco-33b, guanaco-65b, guanaco-7b have no comparison" in n for n in obj["notes"]
    )
    # compare: only the compared shared models count (guanaco-33b is on the Arena but was not compared)
    rc, out, err = run_cli(shipped_db, "compare", "--keep-k", "10", "--reference", "arena", "--format", "csv")
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    assert rc == 0 and row["n_shared"] == 5 and "guanaco-33b" not in row["models"]
    assert "guanaco-33b" in err and "left out" in err


def test_app_slider_path_drops_models_and_keeps_cycle_columns_by_name(shipped_store):
    from engine.graphs.cycles import vertex_cycle_counts
    from engine.views.appstate import SliderContext, app_leaderboard

    st = build_stack(shipped_store.verdicts("vicuna80"))
    ctx = SliderContext.of(st)
    app = app_leaderboard(ctx, ranker="bt", keep_k=10, mu=1.0, bootstrap=20, seed=1)
    idx, _ = ctx.kept(10, 1.0)
    sub = st.subset(idx)
    seen = sub.observed.any(axis=(0, 2))
    assert sorted(app.table["model"]) == sorted(m for m, s in zip(st.models, seen, strict=True) if s)
    assert sorted(app.params["dropped_models"]) == sorted(
        m for m, s in zip(st.models, seen, strict=True) if not s
    )
    bad = vertex_cycle_counts(sub.adj)["c3_bad"].sum(
        axis=0
    )  # per model over the kept graphs, full stack order
    for row in app.table.itertuples(index=False):
        assert row.bad_triads == bad[st.models.index(row.model)]


@pytest.mark.parametrize("selection", [{}, {"judge": "gpt-4"}, {"judge": "bard", "keep_k": 5}])
def test_point_estimates_and_ranks_lie_inside_their_bootstrap_intervals(shipped_store, selection):
    """B = 100 for every ranker: the point score inside [ci_low, ci_high] and the point rank inside
    [rank_low, rank_high] (PGED per prompt with every judge pooled used to give gpt4 676.5 with
    [607, 656]; with bard's 5 kept graphs PGED's name-ordered ranks fell outside competition-rank
    intervals)."""
    for name in RANKERS:
        if ranker_object(name).judged_verdicts:  # the panel's intervals come from its fit (test_panel.py)
            continue
        board = leaderboard(shipped_store, "vicuna80", ranker=name, bootstrap=100, seed=0, **selection)
        unknown = board.table["ci_note"] == "not estimable"  # NaN intervals, checked in test_degenerate_*
        assert board.table.loc[unknown, ["ci_low", "ci_high", "rank_low", "rank_high"]].isna().all().all()
        t = board.table[~unknown]
        tol = 1e-9 * np.maximum(1, t["score"].abs())
        assert ((t["ci_low"] - tol <= t["score"]) & (t["score"] <= t["ci_high"] + tol)).all(), (name, t)
        assert ((t["rank_low"] <= t["rank"]) & (t["rank"] <= t["rank_high"])).all(), (name, t)


def test_cli_refuses_options_it_would_ignore_and_show_kept_prints_only_keep_k(shipped_db):
    for args, text in ((["--pool", "all"], "--pool chooses which graphs keep-K keeps; give --keep-k"),
                       (["--mu", "0.5"], "--mu weights"), (["--per-category"], "--per-category keeps"),
                       (["--bootstrap", "-5"], "--bootstrap takes the number of resamples"),
                       (["--bootstrap-unit", "prompt"], "give --bootstrap B"),
                       (["--judge-weight", "gpt-4=-5", "--ranker", "borda"], "weight of judge 'gpt-4'"),
                       (["--judge-weight", "gpt-4=nan", "--ranker", "pged"], "weight of judge 'gpt-4'")):
        rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", *args, "--format", "csv")
        assert rc == 2 and out == "" and text in err and err.count("\n") == 1, (args, err)
    rc, _, err = run_cli(shipped_db, "compare", "--pool", "all", "--format", "csv")
    assert rc == 2 and "give --keep-k" in err
    # --show-kept: keep-K notes only (claude, K = 1 also has a BT regularisation note on the board)
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--keep-k", "1", "--show-kept",
                           "--format", "csv")
    assert rc == 0 and err and all(line.startswith("note: keep-K:") for line in err.strip().split("\n"))
    rc, out, _ = run_cli(shipped_db, "leaderboard", "--judge", "claude", "--keep-k", "1", "--show-kept",
                         "--format", "json")
    obj = json.loads(out)
    assert set(obj) == {"params", "notes", "kept"} and len(obj["kept"]) == 1
    assert obj["params"]["keep_k"] == 1 and all(n.startswith("keep-K:") for n in obj["notes"])


def test_cli_bootstrap_unit(shipped_db, shipped_store):
    from engine.ranking.bootstrap import bootstrap
    from engine.ranking.leaderboard import compared_models_only

    base = [
        "leaderboard",
        "--ranker",
        "pged",
        "--judge",
        "gpt-4",
        "--bootstrap",
        "30",
        "--seed",
        "2",
        "--format",
        "json",
    ]
    st = compared_models_only(build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4")))[0]
    for unit, expect in (([], "prompt"), (["--bootstrap-unit", "graph"], "graph")):
        rc, out, err = run_cli(shipped_db, *base, *unit)
        obj = json.loads(out)
        assert rc == 0 and obj["params"]["bootstrap_unit"] == expect
        ci = bootstrap(st, "pged", 30, 2, unit=expect).scores_ci
        got = pd.DataFrame(obj["table"]).set_index("model")
        np.testing.assert_allclose(got["ci_low"].reindex(ci.index), ci["low"])
