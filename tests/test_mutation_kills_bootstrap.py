"""The bootstrap's bookkeeping (mutation pass survivors): the confidence level's open interval, the
count of regularised resamples on the refit and count paths, and the verdict-table BT bootstrap on
one-pair prompts; each against a closed form (data where every resample, or none, needs
regularising) or a direct fit of the counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from verdict_frames import canonical_frame

from engine.errors import LensError
from engine.graphs.stack import build_stack
from engine.rankers.bt import fit_bt
from engine.rankers.votes import votes as make_votes
from engine.ranking.bootstrap import bootstrap, bootstrap_bt_verdicts
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.vote_query import frame_vote_rows


def frame(rows: list[dict]) -> pd.DataFrame:
    """A canonical verdict frame from partial rows, category "c" unless given."""
    return canonical_frame(rows, category="c")


def round_robins(n_prompts: int, winner) -> pd.DataFrame:
    """Every prompt compares a, b, c pairwise; ``winner(p, x, y)`` gives each verdict."""
    pairs = (("a", "b"), ("a", "c"), ("b", "c"))
    return frame(
        [
            {"prompt_id": f"p{p}", "model_a": x, "model_b": y, "winner": winner(p, x, y)}
            for p in range(n_prompts)
            for x, y in pairs
        ]
    )


DOMINATED = round_robins(12, lambda p, x, y: "A" if x == "a" else ("A" if p % 3 else "B"))  # a never loses
ALL_TIES = round_robins(12, lambda p, x, y: "tie")  # every pair both ways in every graph


def test_the_level_must_lie_strictly_between_zero_and_one():
    stack = build_stack(ALL_TIES)
    vts = make_votes(frame_vote_rows(ALL_TIES))
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(LensError, match="strictly between 0 and 1"):
            bootstrap(stack, "bt", B=3, level=level)
        with pytest.raises(LensError, match="strictly between 0 and 1"):
            bootstrap_counts(vts, "bt", B=3, level=level)
    assert bootstrap(stack, "bt", B=3, level=0.999).level == 0.999


@pytest.mark.parametrize("ranker", ["bt", "rank-centrality"])
def test_every_resample_of_a_never_beaten_model_is_regularised(ranker):
    B = 7
    assert bootstrap(build_stack(DOMINATED), ranker, B=B, seed=1).n_regularised == B
    assert bootstrap(build_stack(ALL_TIES), ranker, B=B, seed=1).n_regularised == 0


def test_verdict_table_bt_bootstrap_on_one_pair_prompts_centres_on_the_direct_fit():
    # one pair per prompt: the pattern path (distinct (pair, outcome) codes) is taken
    rng = np.random.default_rng(4)
    rows = []
    for p in range(300):
        x, y = [("a", "b"), ("b", "c"), ("a", "c")][p % 3]
        u = rng.random()
        rows.append(
            {
                "prompt_id": f"p{p}",
                "model_a": x,
                "model_b": y,
                "winner": "tie" if u < 0.15 else ("A" if u < 0.75 else "B"),
            }
        )
    v = frame(rows)
    res = bootstrap_bt_verdicts(v, B=200, seed=0)
    models = list(res.models)
    W, T = np.zeros((3, 3)), np.zeros((3, 3))
    for r in v.itertuples():
        i, j = models.index(r.model_a), models.index(r.model_b)
        if r.winner == "tie":
            T[i, j] += 1
            T[j, i] += 1
        else:
            W[(i, j) if r.winner == "A" else (j, i)] += 1
    point = fit_bt(W, T, models).scores.to_numpy()
    assert point[models.index("a")] > point[models.index("b")] > point[models.index("c")]
    np.testing.assert_allclose(np.median(res.samples, axis=0), point, atol=0.1)


SOFT_DOMINATED = DOMINATED.assign(prob_a=np.where(DOMINATED["model_a"] == "a", 1.0, 0.6))
"""a's probability of winning is 1 in every comparison: a never loses, even fractionally."""


def test_soft_bt_bootstrap_counts_its_regularised_refits():
    # soft BT has no batched form: one refit per resample, and every refit here is regularised
    res = bootstrap(build_stack(SOFT_DOMINATED), "bt", B=5, seed=3, soft=True)
    assert res.method == "one refit per resample" and res.n_regularised == 5
    assert (
        bootstrap(build_stack(ALL_TIES.assign(prob_a=0.5)), "bt", B=5, seed=3, soft=True).n_regularised == 0
    )
