"""The count path (DuckDB vote rows → votes → pair counts → fit) against the stack-based rankers,
against evalica on a battle log with repeated battles, and on hand-worked vote units; the sparse
count bootstrap; Parquet files attached in place; Elo in time order."""

from __future__ import annotations

import evalica
import numpy as np
import pandas as pd
import pytest
from conftest import run_engine
from verdict_frames import canonical_frame

from engine.graphs.stack import build_stack
from engine.rankers import rank
from engine.rankers.elo import elo_ratings
from engine.rankers.objects import fit_counts
from engine.rankers.votes import votes as make_votes
from engine.ranking.leaderboard import leaderboard
from engine.ranking.vote_query import frame_vote_rows

COUNT_RANKERS = ("bt", "davidson", "winrate", "copeland", "scorewin", "rank-centrality", "majority")


def frame(rows: list[dict]) -> pd.DataFrame:
    """A canonical verdict frame from partial rows (defaults for the rest)."""
    return canonical_frame(rows)


def tournaments(
    n_prompts: int, n_models: int, seed: int, tie_p: float = 0.15, invalid_p: float = 0.02
) -> pd.DataFrame:
    """Random per-prompt tournaments: every pair of a random subset judged in both orders."""
    rng = np.random.default_rng(seed)
    models = [f"m{i:02d}" for i in range(n_models)]
    strength = rng.normal(0, 1, n_models)
    rows = []
    for q in range(n_prompts):
        sub = np.sort(rng.choice(n_models, size=rng.integers(2, n_models + 1), replace=False))
        for x in range(len(sub)):
            for y in range(x + 1, len(sub)):
                i, j = sub[x], sub[y]
                for order in ("AB", "BA"):
                    a, b = (i, j) if order == "AB" else (j, i)
                    u = rng.random()
                    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
                    w = ("invalid" if u < invalid_p else "tie" if u < invalid_p + tie_p
                         else "A" if rng.random() < p else "B")
                    rows.append(
                        {
                            "prompt_id": f"q{q}",
                            "model_a": models[a],
                            "model_b": models[b],
                            "winner": w,
                            "order": "AB",
                        }
                    )
    return frame(rows)


def count_fit(v: pd.DataFrame, ranker: str, policy: str = "plurality", **params):
    vts = make_votes(frame_vote_rows(v, order_by="prompt" if ranker == "elo" else None), policy)
    return fit_counts(ranker, vts.pair_counts(), vts, **params)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["plurality", "net", "unanimous"])
def test_count_fits_equal_stack_fits_on_random_tournaments(seed, policy):
    v = tournaments(40, 7, seed)
    stack = build_stack(v, policy=policy)
    for r in (*COUNT_RANKERS, "elo"):
        params = {"order": "prompt"} if r == "elo" else {}
        a = count_fit(v, r, policy, **params).scores
        b = rank(stack, r).scores
        assert list(a.index) == list(b.index)
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=0, atol=1e-8, err_msg=r)


@pytest.mark.parametrize("judge", ["gpt-4", "claude", "vicuna-13b"])
def test_count_leaderboard_equals_stack_fit_on_vicuna80(shipped_store, judge):
    v = shipped_store.verdicts("vicuna80", judge=judge)
    stack = build_stack(v)
    for r in ("bt", "davidson", "elo", "winrate", "copeland", "majority", "rank-centrality"):
        params = {"order": "prompt"} if r == "elo" else None
        board = leaderboard(shipped_store, "vicuna80", judge=judge, ranker=r, ranker_params=params)
        assert board.params["unit"] == "votes" and board.params["fit_from"].startswith("pair counts")
        s = rank(stack, r).scores
        np.testing.assert_allclose(board.scores.reindex(s.index).to_numpy(), s.to_numpy(), rtol=0, atol=1e-8,
                                   err_msg=r)
        W, T = stack.win_tie_matrices()
        tab = board.table.set_index("model").reindex(stack.models)
        np.testing.assert_array_equal(tab["wins"], W.sum(axis=1))
        np.testing.assert_array_equal(tab["ties"], T.sum(axis=1))
        np.testing.assert_array_equal(tab["n_graphs_model"], stack.observed.any(axis=2).sum(axis=0))


def test_half_tie_bt_over_repeated_battles_equals_evalica():
    """One pair per prompt, with identical battles repeated (no battle id): every row is a vote."""
    rng = np.random.default_rng(7)
    n, N = 6, 3000
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, N)
    b = (a + rng.integers(1, n, N)) % n
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(N)
    w = np.where(u < 0.1, "tie", np.where(rng.random(N) < p, "A", "B"))
    rows = [{"prompt_id": f"p{k % 1000}", "model_a": f"m{a[k]}", "model_b": f"m{b[k]}", "winner": w[k]}
            for k in range(N)]
    rows += rows[:200]  # 200 battles repeated exactly: they count again
    v = frame(rows)
    ours = count_fit(v, "bt").scores
    code = {"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    ev = evalica.bradley_terry(v["model_a"].tolist(), v["model_b"].tolist(), [code[x] for x in v["winner"]],
                               tolerance=1e-13, limit=100_000)
    theirs = np.log(ev.scores.reindex(ours.index).to_numpy(np.float64))
    np.testing.assert_allclose(ours.to_numpy(), theirs - theirs.mean(), atol=1e-7)
    vts = make_votes(frame_vote_rows(v))
    assert len(vts) == len(v)  # no presentation order: each row its own vote


def test_vote_unit_hand_worked():
    """Two orders of one judge and annotator combine into one vote; another annotator is another vote;
    a repeated row is a repeated vote; a distinct battle id keeps two rows apart."""
    rows = [
        # graph q1: annotator h1 sees x,y in both orders and agrees (x wins) -> one vote x>y
        {"prompt_id": "q1", "model_a": "x", "model_b": "y", "winner": "A", "order": "AB", "annotator": "h1"},
        {"prompt_id": "q1", "model_a": "y", "model_b": "x", "winner": "B", "order": "AB", "annotator": "h1"},
        # annotator h2, both orders disagree -> plurality tie
        {"prompt_id": "q1", "model_a": "x", "model_b": "y", "winner": "A", "order": "AB", "annotator": "h2"},
        {"prompt_id": "q1", "model_a": "y", "model_b": "x", "winner": "A", "order": "AB", "annotator": "h2"},
        # graph q2: the same row twice, no order known -> two votes y>x
        {"prompt_id": "q2", "model_a": "x", "model_b": "y", "winner": "B"},
        {"prompt_id": "q2", "model_a": "x", "model_b": "y", "winner": "B"},
        # graph q3: both orders once each pairing, plus a third row shown x-first -> two votes: (A,A)->x, and
        # y (alone)
        {"prompt_id": "q3", "model_a": "x", "model_b": "y", "winner": "A", "order": "AB"},
        {"prompt_id": "q3", "model_a": "y", "model_b": "x", "winner": "B", "order": "AB"},
        {"prompt_id": "q3", "model_a": "x", "model_b": "y", "winner": "B", "order": "AB"},
        {"prompt_id": "q3", "model_a": "x", "model_b": "z", "winner": "invalid", "order": "AB"},
    ]
    vts = make_votes(frame_vote_rows(frame(rows)))
    pc = vts.pair_counts()
    x, y = pc.models.index("x"), pc.models.index("y")
    assert len(vts) == 6 and pc.models == ("x", "y")
    assert pc.W[x, y] == 2 and pc.W[y, x] == 3 and pc.T[x, y] == 1
    np.testing.assert_array_equal(pc.n_prompts, [3, 3])
    np.testing.assert_array_equal(pc.votes, [6, 6])


def test_count_bootstrap_patterns_rebuild_every_unit(shipped_store):
    from engine.ranking.count_bootstrap import unit_patterns

    v = tournaments(30, 6, 3)
    vts = make_votes(frame_vote_rows(v))
    for unit in ("graph", "prompt", "vote"):
        mat, mult = unit_patterns(vts, unit)
        total = np.asarray(mat.T @ mult).ravel()
        np.testing.assert_array_equal(total, np.bincount(vts.cells(), minlength=3 * vts.n * vts.n))
        assert int(mult.sum()) == (len(vts) if unit == "vote" else np.unique(
            vts.graph if unit == "graph" else vts.prompt).size)
    # brute force: the distinct unit rows, as sets of (cell, count)
    rows = {}
    for g, c in zip(vts.graph.tolist(), vts.cells().tolist(), strict=True):
        rows.setdefault(g, []).append(c)
    distinct = {tuple(sorted(r)) for r in rows.values()}
    mat, mult = unit_patterns(vts, "graph")
    assert mat.shape[0] == len(distinct)


def test_count_bootstrap_intervals_hold_the_point_estimate(shipped_store):
    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="bt", bootstrap=200, seed=1)
    t = board.table
    assert (t["ci_low"] <= t["score"] + 1e-12).all() and (t["score"] <= t["ci_high"] + 1e-12).all()
    assert (t["rank_low"] <= t["rank"]).all() and (t["rank"] <= t["rank_high"]).all()
    assert board.params["bootstrap_method"].startswith("batched: multinomial graph weights on a sparse")
    for r in ("davidson", "winrate", "copeland", "majority", "rank-centrality"):
        b = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker=r, bootstrap=20, seed=1)
        assert b.bootstrap.samples.shape == (20, len(b.table))


def test_elo_follows_timestamps_when_present():
    rng = np.random.default_rng(5)
    rows = [{"prompt_id": f"p{k}", "model_a": f"m{k % 4}", "model_b": f"m{(k + 1 + k // 4 % 3) % 4}",
             "winner": rng.choice(["A", "B", "tie"])} for k in range(60)]
    v = frame(rows)
    v["tstamp"] = rng.permutation(60).astype(float)
    vts_rows = frame_vote_rows(v, order_by="time")
    vts = make_votes(vts_rows)
    res = fit_counts("elo", vts.pair_counts(), vts)
    order = np.argsort(v["tstamp"].to_numpy())
    models = sorted(set(v.model_a) | set(v.model_b))
    idx = {m: i for i, m in enumerate(models)}
    s = v["winner"].map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()[order]
    r = elo_ratings(
        v["model_a"].map(idx).to_numpy()[order], v["model_b"].map(idx).to_numpy()[order], s, len(models)
    )
    np.testing.assert_allclose(res.scores.reindex(models).to_numpy(), r - r.mean(), atol=1e-9)


def test_parquet_attached_in_place_ranks_like_the_store(shipped_store, tmp_path, db_path):
    from engine.errors import LensError
    from engine.store.attached import attach
    from engine.store.connection import Store

    v = shipped_store.verdicts("vicuna80", judge="gpt-4").drop(columns=["verdict_id", "dataset"])
    half = len(v) // 2
    v.iloc[:half].to_parquet(tmp_path / "part-0.parquet")
    v.iloc[half:].to_parquet(tmp_path / "part-1.parquet")
    store = Store(db_path)
    try:
        info = attach(store, "big", str(tmp_path / "part-*.parquet"))
        assert info["files"] == 2 and info["verdicts"] == len(v)
        assert store.cursor().execute("SELECT count(*) FROM verdicts").fetchall()[0][0] == 0  # nothing copied
        for r in ("bt", "davidson"):
            here = leaderboard(store, "big", ranker=r, bootstrap=10)
            there = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker=r)
            np.testing.assert_allclose(
                here.scores.reindex(there.scores.index).to_numpy(), there.scores.to_numpy(), atol=1e-10
            )
        kept = leaderboard(store, "big", ranker="pged")  # the graph path reads the files too
        assert len(kept.table) == len(here.table)
        with pytest.raises(LensError, match="no winner column"):
            v.drop(columns=["winner"]).to_parquet(tmp_path / "bad.parquet")
            attach(store, "bad", str(tmp_path / "bad.parquet"))
        with pytest.raises(LensError, match="No file matches .*nothing-"):
            attach(store, "none", str(tmp_path / "nothing-*.parquet"))
        (tmp_path / "text.parquet").write_text("not parquet")
        with pytest.raises(LensError, match="Cannot read Parquet files"):
            attach(store, "text", str(tmp_path / "text.parquet"))
    finally:
        store.close()


def test_sums_over_prompts_warn_when_participation_differs():
    """Borda and PGED sum over prompts: a model in more prompts is warned about, unless normalised."""
    from engine.ranking.board_notes import board_notes
    from engine.ranking.leaderboard import leaderboard_from_stack

    rows = []
    for q in range(6):  # x and y meet in every prompt, z only in the first two
        models = ["x", "y", "z"] if q < 2 else ["x", "y"]
        for i in range(len(models)):
            for j in range(i + 1, len(models)):
                rows.append({"prompt_id": f"q{q}", "model_a": models[i], "model_b": models[j], "winner": "B"})
    stack = build_stack(frame(rows))
    for r in ("borda", "pged"):
        board = leaderboard_from_stack(stack, ranker=r)
        assert board.table.set_index("model")["n_prompts"].to_dict() == {"x": 6, "y": 6, "z": 2}
        warn = [n for n in board_notes(board) if "different numbers of prompts (2 to 6)" in n]
        assert len(warn) == 1 and warn[0].startswith(f"{r}:")
    normalised = leaderboard_from_stack(stack, ranker="borda", ranker_params={"normalize": True})
    assert not [n for n in board_notes(normalised) if "different numbers of prompts" in n]
    even = build_stack(frame([r for r in rows if r["prompt_id"] in ("q0", "q1")]))
    assert not [
        n for n in board_notes(leaderboard_from_stack(even, ranker="borda")) if "different numbers" in n
    ]


def test_soft_bt_from_votes_equals_the_stack_soft_fit():
    v = tournaments(30, 6, 11)
    rng = np.random.default_rng(11)
    has = rng.random(len(v)) < 0.6
    v.loc[has, "prob_a"] = rng.random(has.sum())
    a = count_fit(v, "bt", soft=True)
    b = rank(build_stack(v), "bt", soft=True)
    np.testing.assert_allclose(a.scores.to_numpy(), b.scores.reindex(a.scores.index).to_numpy(), atol=1e-8)
    assert a.details["pairs_without_probability"] == b.details["pairs_without_probability"] > 0


def test_cli_attach_and_elo_in_time_order_over_parquet(tmp_path, shipped_db_copy):
    """`datasets attach` + `leaderboard --ranker elo` over Parquet with a tstamp column: time order by
    default,
    stated in the note; order=input follows the file."""
    import json

    rng = np.random.default_rng(3)
    rows = [{"prompt_id": f"p{k}", "model_a": f"m{k % 3}", "model_b": f"m{(k + 1) % 3}",
             "winner": rng.choice(["A", "B", "tie"])} for k in range(40)]
    v = frame(rows)[["prompt_id", "model_a", "model_b", "winner"]]
    v["tstamp"] = rng.permutation(40).astype(float) + 1.7e9
    v.to_parquet(tmp_path / "log.parquet")
    db_path = shipped_db_copy  # no first-use import of the shipped datasets

    def cli(*args):
        out = run_engine(["--db", str(db_path), *args])
        assert out.returncode == 0, out.stderr
        return out

    assert "attached 40 verdicts in 1 Parquet file(s)" in cli("datasets", "attach", "log",
                                                              str(tmp_path / "*.parquet")).stdout
    models = ["m0", "m1", "m2"]
    idx = {m: i for i, m in enumerate(models)}
    s = v["winner"].map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()
    for param, order in ((None, np.argsort(v["tstamp"].to_numpy())), ("order=input", np.arange(40))):
        args = ["leaderboard", "--dataset", "log", "--ranker", "elo", "--format", "json"]
        got = json.loads(cli(*args, *(["--param", param] if param else [])).stdout)
        r = elo_ratings(
            v["model_a"].map(idx).to_numpy()[order], v["model_b"].map(idx).to_numpy()[order], s[order], 3
        )
        scores = {row["model"]: row["score"] for row in got["table"]}
        np.testing.assert_allclose([scores[m] for m in models], r - r.mean(), atol=1e-9)
        assert any(
            ("order: by timestamp" if param is None else "order: source order") in n for n in got["notes"]
        )
        assert got["params"]["unit"] == "votes"


def test_app_slider_ranks_the_votes_of_the_kept_graphs(shipped_store):
    """The app's leaderboard with votes (count path) equals the stack path on a judge without annotators,
    for every K tried (keep-K's kept graph keys select the votes)."""
    from engine.ranking.vote_query import store_vote_rows
    from engine.views.appstate import SliderContext, app_leaderboard

    v = shipped_store.verdicts("vicuna80", judge="gpt-4")
    ctx = SliderContext.of(build_stack(v))
    vts = make_votes(store_vote_rows(shipped_store, "vicuna80", judge="gpt-4"))
    for k in (None, 5, 40):
        a = app_leaderboard(ctx, ranker="bt", keep_k=k, mu=1.0, bootstrap=0, seed=0, votes=vts)
        b = app_leaderboard(ctx, ranker="bt", keep_k=k, mu=1.0, bootstrap=0, seed=0)
        assert a.params["unit"] == "votes" and b.params["unit"] == "graphs"
        ta, tb = a.table.set_index("model"), b.table.set_index("model").reindex(a.table["model"])
        np.testing.assert_allclose(ta["score"], tb["score"], atol=1e-8)
        for col in ("wins", "losses", "ties", "n_graphs_model", "bad_triads"):
            np.testing.assert_array_equal(ta[col], tb[col], err_msg=f"K={k} {col}")


def test_distinct_battle_ids_keep_two_orders_apart():
    """Two presentation orders of one pair in one graph are one vote, unless their battle ids differ."""
    rows = [{"prompt_id": "q", "model_a": "x", "model_b": "y", "winner": "A", "order": "AB"},
            {"prompt_id": "q", "model_a": "y", "model_b": "x", "winner": "A", "order": "AB"}]
    one = make_votes(frame_vote_rows(frame(rows)))
    assert len(one) == 1 and one.pair_counts().T[0, 1] == 1  # disagreeing orders: one tied vote
    two = make_votes(frame_vote_rows(frame([{**r, "battle_id": str(k)} for k, r in enumerate(rows)])))
    pc = two.pair_counts()
    assert len(two) == 2 and pc.W[0, 1] == 1 and pc.W[1, 0] == 1 and pc.T[0, 1] == 0
