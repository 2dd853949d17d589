"""The count bootstrap's count of regularised resamples (mutation pass survivor: on the refit path it
was free to read 0), against data where every resample, or none, needs regularising."""

from __future__ import annotations

import pytest
from test_mutation_kills_bootstrap import ALL_TIES, DOMINATED, SOFT_DOMINATED

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
