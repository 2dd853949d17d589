"""The count bootstrap's count of regularised resamples (mutation pass survivor: on the refit path it
was free to read 0), against data where every resample, or none, needs regularising."""

from __future__ import annotations

import pytest
from test_mutation_kills_bootstrap import ALL_TIES, DOMINATED, SOFT_DOMINATED, round_robins

from engine.rankers.votes import votes as make_votes
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.vote_query import frame_vote_rows


def votes_of(frame):
    return make_votes(frame_vote_rows(frame))


@pytest.mark.parametrize("ranker", ["bt", "rank-centrality"])
def test_every_batched_resample_of_a_never_beaten_model_is_regularised(ranker):
    assert bootstrap_counts(votes_of(DOMINATED), ranker, B=7, seed=1).n_regularised == 7
    assert bootstrap_counts(votes_of(ALL_TIES), ranker, B=7, seed=1).n_regularised == 0


def test_soft_bt_count_bootstrap_counts_its_regularised_refits():
    res = bootstrap_counts(votes_of(SOFT_DOMINATED), "bt", B=5, seed=3, soft=True)
    assert res.method == "one refit per resample" and res.n_regularised == 5
    assert (
        bootstrap_counts(votes_of(ALL_TIES.assign(prob_a=0.5)), "bt", B=5, seed=3, soft=True).n_regularised
        == 0
    )


def test_elo_count_bootstrap_refits_each_resample_in_the_votes_order():
    """Elo reads votes in order, so a resample must keep it: each vote repeated as often as its vote
    was drawn, in place. The expected samples are built here from the same seeded draws, one Elo fit
    per explicit resample (a resample read in any other order, e.g. reversed, gives other ratings on
    this cycle-rich data)."""
    import numpy as np

    from engine.rankers.objects import ranker_object

    data = round_robins(6, lambda p, x, y: "A" if (p + ord(x) + ord(y)) % 3 else "B")
    vts = votes_of(data)
    B, seed = 4, 11
    res = bootstrap_counts(vts, "elo", B=B, seed=seed, unit="vote", order="input")
    rng = np.random.default_rng(seed)
    obj = ranker_object("elo")
    for b in range(B):
        drawn = rng.multinomial(len(vts), np.full(len(vts), 1.0 / len(vts)))
        sub = vts.take(np.repeat(np.arange(len(vts)), drawn))
        want = obj.fit_counts(sub.fit_pair_counts(), sub, order="input").scores.reindex(list(vts.models))
        assert np.allclose(res.samples[b], want.to_numpy(np.float64))
