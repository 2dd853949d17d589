"""engine.views.appstate: the slider fast path against engine.graphs.truncation.select_keep_k and pandas
ranks."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.graphs.truncation import select_keep_k, truncation_scores
from engine.ingest.importer import file_columns
from engine.ranking.leaderboard import leaderboard_from_stack
from engine.store.datasets import dataset_choices
from engine.views.appstate import SliderContext, app_leaderboard, with_reference


def _stack(seed: int, n_prompts: int = 30):
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(6)]
    rows = []
    for p in range(n_prompts):
        for a, b in itertools.combinations(models, 2):
            rows.append({"prompt_id": str(p if p % 3 else f"x{p}"), "model_a": a, "model_b": b,
                         "winner": rng.choice(["A", "B", "tie"], p=[0.45, 0.35, 0.2])})
    df = pd.DataFrame(rows)
    df["dataset"], df["judge"], df["variant"], df["turn"], df["variant_kind"] = "d", "j", 0, 1, "original"
    df["category"], df["prob_a"] = "c", np.nan
    return build_stack(df)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kept_graphs_equal_select_keep_k(seed):
    stack = _stack(seed)
    ctx = SliderContext.of(stack)
    counts = cycle_counts(stack)
    for mu in (0.0, 0.1, 1.0, 10.0):
        for k in (1, 5, 17, stack.T):
            idx, threshold = ctx.kept(k, mu)
            sel = select_keep_k(truncation_scores(counts, mu), stack.keys, k)
            assert idx.tolist() == sorted(sel.index.tolist())
            assert threshold == sel.threshold


def test_move_equals_engine_leaderboard_with_truncation():
    stack = _stack(5)
    board = app_leaderboard(stack, ranker="bt", keep_k=12, mu=1.0, bootstrap=50, seed=3)
    ref = leaderboard_from_stack(stack, ranker="bt", keep_k=12, mu=1.0, bootstrap=50, seed=3)
    cols = ["model", "rank", "score", "ci_low", "ci_high", "wins", "losses", "ties"]
    pd.testing.assert_frame_equal(board.table[cols], ref.table[cols])
    assert (
        board.params["keep_k"] == 12
        and board.params["n_graphs"] == 12
        and board.params["n_graphs_pool"] == stack.T
    )


def test_with_reference_matches_pandas_ranks():
    table = pd.DataFrame({"model": list("abcdef"), "score": [3.0, 2.0, 2.0, 1.0, 0.5, 0.0]})
    ref = pd.Series({"a": 10.0, "c": 30.0, "d": 20.0, "f": 20.0, "zz": 99.0})
    out = with_reference(table, ref).set_index("model")
    mapped = ["a", "c", "d", "f"]
    exp_ref = ref[mapped].rank(ascending=False, method="min").astype(int)
    exp_here = table.set_index("model").loc[mapped, "score"].rank(ascending=False, method="min").astype(int)
    assert out.loc[mapped, "ref_rank"].astype(int).tolist() == exp_ref.tolist()
    assert out.loc[mapped, "ref_diff"].astype(int).tolist() == (exp_here - exp_ref).tolist()
    assert out.loc[["b", "e"], "ref_rank"].isna().all()


def test_dataset_choices_and_file_columns(shipped_store):
    ch = dataset_choices(shipped_store, "vicuna80")
    v = shipped_store.verdicts("vicuna80", valid_only=True)
    assert set(ch.judges) == set(v["judge"])
    per_judge = v.melt(id_vars="judge", value_vars=["model_a", "model_b"]).groupby("judge")["value"].nunique()
    assert ch.models_per_judge == per_judge.to_dict()
    assert ch.default_judge == sorted(per_judge.index, key=lambda j: (-per_judge[j], j))[0]
    assert file_columns(b"A,b c,D\n1,2,3\n", "x.csv") == ["A", "b c", "D"]
    assert file_columns(b'{"x": 1}\n{"y": 2, "x": 3}\n', "x.jsonl") == ["x", "y"]


def test_keep_k_pool_leaves_sampling_replicates_out_like_the_cli():
    """The app's keep-K chooses from originals + paraphrases, as ``truncation.keep_k_graphs`` (the
    CLI's leaderboard) does; a direct sort over the pool graphs is the independent check."""
    from engine.graphs.truncation import keep_k_graphs

    stack = _stack(7)
    kinds = np.array(["original", "paraphrase", "sample"])[np.arange(stack.T) % 3]
    keys = stack.keys.copy()
    keys["variant_kind"] = kinds
    keys["variant"] = np.arange(stack.T) % 3
    stack = dataclasses.replace(stack, keys=keys)
    ctx = SliderContext.of(stack)
    assert ctx.n_pool == int((kinds != "sample").sum())
    counts = cycle_counts(stack)
    for mu in (0.0, 1.0, 5.0):
        scores = truncation_scores(counts, mu)
        pool = [i for i in range(stack.T) if kinds[i] != "sample"]
        for k in (1, 4, ctx.n_pool):
            idx, threshold = ctx.kept(k, mu)
            direct = sorted(sorted(pool, key=lambda i: (scores[i], ctx.tie_rank[i]))[:k])
            assert idx.tolist() == direct and threshold == max(scores[direct])
            assert idx.tolist() == keep_k_graphs(stack, k, mu=mu).index.tolist()
    with pytest.raises(LensError, match="pool size"):
        ctx.kept(ctx.n_pool + 1, 1.0)
    idx, _ = ctx.kept(None, 1.0)
    assert idx.tolist() == list(range(stack.T))  # the Leaderboard page: every graph of the selection
