"""One keep-K on every path, on generated datasets of every shape (tests/seam_data.py): the app's
slider (``SliderContext.kept``), ``python -m engine leaderboard --keep-k`` (run in process) and the
keep-K curve (``keep_k_selections``) keep the same graphs with the same threshold S_K, and the app's
count-ranker board of the kept graphs equals the CLI's.

The explicit example is the shape that separates the coverage references: sampling replicates
compare every pair of a prompt's models while originals and paraphrases compare a sparse part, so a
reference capacity taken over all graphs (not the perturbed pool) rescales every pool graph's score
differently and keeps other graphs.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_engine
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.experiments.curves import keep_k_selections
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import build_stack
from engine.rankers.votes import votes as make_votes
from engine.ranking.leaderboard import leaderboard
from engine.ranking.vote_query import frame_vote_rows
from engine.views.appstate import SliderContext, app_leaderboard
from tests.seam_data import Shape, imported, shapes

KEY = ("judge", "prompt_id", "variant", "turn")
SETTINGS = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
WIDER_SAMPLES = Shape(seed=3, n_models=6, n_prompts=7, judges=2, paraphrases=1, samples=2, wider_samples=True,
                      orders="both", tie_p=0.15, categories=2)


def key_set(keys: pd.DataFrame) -> set[tuple[str, ...]]:
    return set(zip(*(keys[c].astype(str) for c in KEY), strict=True))


@SETTINGS
@given(shape=shapes(allow_sparse=False), ks=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=2),
       mu=st.sampled_from((0.5, 1.0, 3.0)))
@example(shape=WIDER_SAMPLES, ks=[0.0, 0.3, 0.5, 0.7, 1.0], mu=1.0)
def test_app_cli_and_curve_keep_the_same_graphs(tmp_path_factory, shape, ks, mu):
    """``ks`` are fractions of the pool (so every K is valid on the slider); each K is kept three ways."""
    folder = tmp_path_factory.mktemp("seam")
    store, db, _ = imported(folder, shape)
    try:
        v = store.verdicts("seam")
        ctx = SliderContext.of(build_buckets(v))  # as app_pages/_lens.slider_context builds it
        if ctx.n_pool == 0:  # no pool graph can hold a cycle (one pair per prompt): every path refuses
            with pytest.raises(LensError, match="can hold a cycle"):
                ctx.kept(1, mu)
            done = run_engine(
                ["--db", db, "leaderboard", "--dataset", "seam", "--keep-k", "1", "--format", "json"]
            )
            assert done.returncode == 2 and "can hold a cycle" in done.stderr
            return
        stack = build_stack(v)
        k_values = sorted({max(1, round(f * ctx.n_pool)) for f in ks})
        _, _, _, _, kept_of = keep_k_selections(stack, k_values, mu=mu, per_category=False, pool="perturbed")
        vts = make_votes(frame_vote_rows(v))
        for xi, k in enumerate(k_values):
            idx, app_thr = ctx.kept(k, mu)
            app = key_set(ctx.stack.keys.iloc[idx])
            curve = key_set(stack.keys.iloc[kept_of[(xi, "all")]])
            board = leaderboard(store, "seam", ranker="bt", keep_k=k, mu=mu)
            assert len(app) == k
            assert app == curve == key_set(board.kept), (k, mu)
            assert app_thr == board.params["threshold"]
            app_board = app_leaderboard(ctx, ranker="bt", keep_k=k, mu=mu, bootstrap=0, seed=0, votes=vts)
            ta, tc = (b.table.set_index("model").sort_index() for b in (app_board, board))
            cols = ["wins", "losses", "ties", "votes", "n_graphs_model", "n_prompts"]
            np.testing.assert_array_equal(ta[cols].to_numpy(np.int64), tc[cols].to_numpy(np.int64))
            np.testing.assert_allclose(ta["score"].to_numpy(float), tc["score"].to_numpy(float), atol=1e-9)
        # per category: the CLI's --per-category against the per-category curve (the app has no such slider)
        k = k_values[0]
        _, pools, _, _, per_cat = keep_k_selections(stack, [k], mu=mu, per_category=True, pool="perturbed")
        curve_cat = set().union(*(key_set(stack.keys.iloc[per_cat[(0, c)]]) for c in pools))
        assert (
            key_set(leaderboard(store, "seam", ranker="bt", keep_k=k, mu=mu, per_category=True).kept)
            == curve_cat
        )
        k = k_values[-1]
        done = run_engine(["--db", db, "leaderboard", "--dataset", "seam", "--keep-k", k, "--mu", mu,
                           "--format", "json"])
        assert done.returncode == 0, done.stderr
        obj = json.loads(done.stdout)
        idx, app_thr = ctx.kept(k, mu)
        assert key_set(pd.DataFrame(obj["kept"])) == key_set(ctx.stack.keys.iloc[idx])
        assert obj["params"]["threshold"] == app_thr
        # the graph path
        app_b = app_leaderboard(ctx, ranker="borda", keep_k=k, mu=mu, bootstrap=0, seed=0).table
        cli_b = leaderboard(store, "seam", ranker="borda", keep_k=k, mu=mu).table
        pd.testing.assert_frame_equal(
            app_b[list(cli_b.columns)].reset_index(drop=True), cli_b.reset_index(drop=True), check_dtype=False
        )
    finally:
        store.close()


def test_kept_graphs_by_hand_on_wider_samples(tmp_path):
    """The shared scoring itself (``keep_k_scores``), against pandas: pool = non-sample graphs whose
    pairs could carry a cycle; R3, R4 = the largest capacities in that pool; score = C3_bad·R3/cap3 +
    mu·C4_bad·R4/cap4 (0 where cap = 0); keep the K smallest by (score, judge, prompt id as a number,
    variant, turn), for every K, on the app's and the CLI's paths. The data separate the references:
    over all graphs (samples included) R is larger and keeps another set or threshold at some K, so the
    explicit example of the seam test above can tell a slider that takes the wrong one."""
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    mu = 1.5
    store, _, _ = imported(tmp_path, WIDER_SAMPLES)
    try:
        v = store.verdicts("seam")
        stack = build_stack(v)
        keys = stack.keys.reset_index(drop=True)
        counts, cap = cycle_counts(stack), cycle_capacity(stack)
        g = pd.DataFrame({"judge": keys["judge"].astype(str), "pid": keys["prompt_id"].astype(int),
                          "variant": keys["variant"].astype(int), "turn": keys["turn"].astype(int),
                          "sample": keys["variant_kind"].astype(str) == "sample",
                          "c3": counts["c3_bad"].to_numpy(float), "c4": counts["c4_bad"].to_numpy(float),
                          "cap3": cap["cap3"].to_numpy(float), "cap4": cap["cap4"].to_numpy(float)})
        pool = g[~g["sample"] & (g["cap3"] + g["cap4"] > 0)].copy()
        assert g.loc[g["sample"], "cap3"].max() > pool["cap3"].max()  # the samples are better covered
        r3, r4 = pool["cap3"].max(), pool["cap4"].max()
        wrong = g.loc[pool.index].assign(  # the reference over every graph, samples included
            s=lambda d: (
                np.where(d["cap3"] > 0, d["c3"] * g["cap3"].max() / d["cap3"].where(d["cap3"] > 0, 1), 0.0)
                + mu
                * np.where(d["cap4"] > 0, d["c4"] * g["cap4"].max() / d["cap4"].where(d["cap4"] > 0, 1), 0.0)
            )
        )
        pool["s"] = np.where(
            pool["cap3"] > 0, pool["c3"] * r3 / pool["cap3"].where(pool["cap3"] > 0, 1), 0.0
        ) + mu * np.where(pool["cap4"] > 0, pool["c4"] * r4 / pool["cap4"].where(pool["cap4"] > 0, 1), 0.0)
        by_hand = pool.sort_values(["s", "judge", "pid", "variant", "turn"], kind="stable")
        wrong = wrong.sort_values(["s", "judge", "pid", "variant", "turn"], kind="stable")
        ctx = SliderContext.of(build_buckets(v))
        assert ctx.n_pool == len(pool)
        differ = 0
        for k in range(1, len(pool) + 1):
            head = by_hand.head(k)
            want = set(zip(head["judge"], head["pid"].astype(str), head["variant"].astype(str),
                           head["turn"].astype(str), strict=True))
            idx, thr = ctx.kept(k, mu)
            assert key_set(ctx.stack.keys.iloc[idx]) == want, k
            assert thr == pytest.approx(float(head["s"].iloc[-1]), abs=1e-12)
            differ += (not head.index.sort_values().equals(wrong.head(k).index.sort_values())
                       or head["s"].iloc[-1] != wrong["s"].iloc[k - 1])
            if k % 7 == 1:
                assert key_set(leaderboard(store, "seam", ranker="bt", keep_k=k, mu=mu).kept) == want, k
        assert differ > 0
    finally:
        store.close()
