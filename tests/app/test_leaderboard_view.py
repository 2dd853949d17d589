"""The leaderboard display (engine.views.leaderboard_view): rank (UB), +x / -y, Elo-like scale, votes,
prompts and small-sample notes, each checked against a hand-worked case or a second computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.views.leaderboard_view import (
    SMALL_GRAPHS,
    SMALL_VOTES,
    board_view,
    participation,
    score_digits,
)


def test_the_view_shows_rank_ub_of_the_score_intervals_by_hand():
    # score intervals [9, 11], [8, 10], [5, 8], [1, 4]: the third is below the first only (8 < 9; 8 == 8 is
    # not wholly above), the fourth below all three; the ranker's own rank stands beside it
    t = _table([10.0, 9.0, 6.5, 2.5], lo=[9.0, 8.0, 5.0, 1.0], hi=[11.0, 10.0, 8.0, 4.0])
    v = board_view(t, ranker="bt", n_graphs=50)
    assert v.frame["rank_ub"].tolist() == [1, 1, 2, 4] and v.frame["rank"].tolist() == [1, 2, 3, 4]
    assert list(v.frame.columns[:5]) == ["rank", "model", "score", "interval", "rank_ub"]  # main ones first


def test_rows_follow_the_score_even_where_rank_ub_does_not():
    """Issue 25: on sparse data the table sorted by rank (UB) showed 19 models at rank 1 and a score
    column that rose going down. A wide interval gives a lower-scored model a better rank (UB): here c
    (score 8, interval [1, 20]) has rank (UB) 1 and b (score 9, [8.9, 9.1]) rank (UB) 2, as a's
    interval [9.5, 10.5] lies wholly above b's only. The rows stay in score order, rank (UB) beside."""
    t = _table([10.0, 9.0, 8.0], lo=[9.5, 8.9, 1.0], hi=[10.5, 9.1, 20.0])
    frame = board_view(t, ranker="bt", n_graphs=50).frame
    assert frame["model"].tolist() == ["m0", "m1", "m2"]
    assert frame["score"].tolist() == [10.0, 9.0, 8.0] and frame["rank"].tolist() == [1, 2, 3]
    lo, hi = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    brute = [1 + sum(lo[j] > hi[i] for j in range(3) if j != i) for i in range(3)]
    assert frame["rank_ub"].tolist() == brute == [1, 2, 1]


def _table(scores, lo=None, hi=None, rank_low=None, rank_high=None, votes=None):
    n = len(scores)
    t = pd.DataFrame({"model": [f"m{i}" for i in range(n)], "score": scores, "rank": np.arange(1, n + 1)})
    t["ci_low"] = np.nan if lo is None else lo
    t["ci_high"] = np.nan if hi is None else hi
    t["rank_low"] = pd.array([pd.NA] * n if rank_low is None else rank_low, dtype="Int64")
    t["rank_high"] = pd.array([pd.NA] * n if rank_high is None else rank_high, dtype="Int64")
    if votes is not None:
        t["votes"] = votes
    return t


def test_interval_as_plus_minus_and_digits():
    t = _table([675.0, 12.5], lo=[660.25, 10.0], hi=[690.0, 13.0], rank_low=[1, 2], rank_high=[1, 2])
    v = board_view(t, ranker="pged", n_graphs=50)
    # 675 needs one decimal so the column is not clipped; +15.0 / -14.8 (14.75 rounds to even)
    assert v.digits == 1 and score_digits([0.5, -2.0]) == 3 and score_digits([-15.0]) == 2
    assert v.frame["interval"].tolist() == ["+15.0 / -14.8", "+0.5 / -2.5"]
    assert v.frame["rank_range"].tolist() == ["1", "2"]
    assert "wholly above" in v.rank_note


def test_without_bootstrap_the_rank_note_says_what_rank_is_shown():
    v = board_view(_table([1.0, 0.0, -1.0]), ranker="bt", n_graphs=50)
    assert "rank_ub" not in v.frame.columns and v.frame["rank"].tolist() == [1, 2, 3]
    assert v.frame["interval"].tolist() == ["—"] * 3 and "no bootstrap" in v.rank_note


def test_elo_scale_matches_the_bt_ranker_own_elo_scale():
    from engine.graphs.stack import build_stack
    from engine.rankers import rank

    rows = []
    rng = np.random.default_rng(0)
    strength = {"a": 1.0, "b": 0.3, "c": -0.4, "d": -0.9}
    names = list(strength)
    for p in range(60):
        i, j = rng.choice(4, 2, replace=False)
        a, b = names[i], names[j]
        pa = 1 / (1 + np.exp(strength[b] - strength[a]))
        rows.append(
            {
                "dataset": "d",
                "judge": "j",
                "prompt_id": str(p),
                "variant": 0,
                "turn": 1,
                "category": "c",
                "variant_kind": "original",
                "prob_a": np.nan,
                "model_a": a,
                "model_b": b,
                "winner": "A" if rng.random() < pa else "B",
            }
        )
    stack = build_stack(pd.DataFrame(rows))
    log = rank(stack, "bt").scores
    elo = rank(stack, "bt", scale="elo").scores
    t = pd.DataFrame({"model": log.index, "score": log.to_numpy(), "rank": np.arange(1, len(log) + 1),
                      "ci_low": np.nan, "ci_high": np.nan})
    shown = board_view(t, ranker="bt", n_graphs=60, elo_scale=True).frame.set_index("model")["score"]
    assert (shown - 1000.0).to_dict() == pytest.approx((elo - elo.mean()).to_dict(), abs=1e-6)
    with pytest.raises(ValueError):
        board_view(t, ranker="copeland", n_graphs=60, elo_scale=True)


def test_small_sample_notes():
    t = _table([1.0, 0.0], votes=[SMALL_VOTES, SMALL_VOTES - 1])
    v = board_view(t, ranker="bt", n_graphs=SMALL_GRAPHS - 1)
    assert len(v.notes) == 2 and "only 9 graph" in v.notes[0] and "m1 has fewer than" in v.notes[1]
    assert board_view(t.assign(votes=SMALL_VOTES), ranker="bt", n_graphs=SMALL_GRAPHS).notes == ()


def test_participation_counts_votes_and_prompts_with_pandas(shipped_store):
    from engine.graphs.stack import build_stack

    verdicts = shipped_store.verdicts("vicuna80", judge="claude")
    part = participation(build_stack(verdicts))
    valid = verdicts[verdicts["winner"] != "invalid"].copy()
    valid["lo"] = valid[["model_a", "model_b"]].min(axis=1)
    valid["hi"] = valid[["model_a", "model_b"]].max(axis=1)
    pairs = valid.drop_duplicates(["prompt_id", "variant", "turn", "lo", "hi"])
    long = pd.concat([pairs[["prompt_id", "lo"]].rename(columns={"lo": "m"}),
                      pairs[["prompt_id", "hi"]].rename(columns={"hi": "m"})])
    assert part["votes"].sort_index().to_dict() == long.groupby("m").size().sort_index().to_dict()
    assert (
        part["n_prompts"].sort_index().to_dict()
        == long.groupby("m")["prompt_id"].nunique().sort_index().to_dict()
    )
