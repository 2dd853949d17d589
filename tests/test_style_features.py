"""Style features on votes (issue 24 point 1): ``VoteRows.style`` read from the verdicts' per-side count
columns, ``Votes.style`` turned to each vote's sides, carried by ``take``; checked against a loop over
the verdicts (a second path) on random data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.rankers.votes import votes
from engine.ranking.vote_query import frame_vote_rows, store_vote_rows
from engine.style.features import STYLE_COLUMNS, STYLE_FEATURES


def random_verdicts(seed: int, n: int = 300, models: int = 5) -> pd.DataFrame:
    """Verdicts on few prompts and pairs, shown both ways (so AB and BA verdicts combine into one vote),
    with random per-side counts, some rows without any."""
    rng = np.random.default_rng(seed)
    names = [f"m{k}" for k in range(models)]
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    style = rng.integers(0, 500, (n, len(STYLE_COLUMNS))).astype(float)
    style[rng.random(n) < 0.2] = np.nan
    frame = pd.DataFrame({
        "judge": "j", "prompt_id": [f"p{k}" for k in rng.integers(0, 6, n)], "variant": 0, "turn": 1,
        "model_a": [names[k] for k in a], "model_b": [names[k] for k in b],
        "winner": rng.choice(["A", "B", "tie"], n), "order": rng.choice(["AB", "BA"], n),
        "source_file": "f.csv", "source_line": np.arange(2, n + 2),
    })
    for k, c in enumerate(STYLE_COLUMNS):
        frame[c] = style[:, k]
    return frame


def test_names_are_lmarenas_four_per_side():
    assert STYLE_FEATURES == ("tokens", "headers", "lists", "bold")
    assert STYLE_COLUMNS == ("tokens_a", "headers_a", "lists_a", "bold_a",
                             "tokens_b", "headers_b", "lists_b", "bold_b")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vote_rows_carry_each_verdicts_counts(seed):
    """Each verdict row's style is its own eight counts (the frame read in source order)."""
    frame = random_verdicts(seed)
    rows = frame_vote_rows(frame, order_by="input", style=True)
    assert rows.style is not None and rows.style.shape == (len(frame), 8)
    np.testing.assert_array_equal(rows.style, frame[list(STYLE_COLUMNS)].to_numpy())
    assert frame_vote_rows(frame, order_by="input").style is None  # not asked: not read


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_votes_turn_counts_to_their_sides(seed):
    """Per vote: the first verdict's counts, model_a's half on the side of the vote's lo model (a loop
    over the votes, against the vectorised pairing). Kills a planted orientation by model_a (no swap)."""
    frame = random_verdicts(seed)
    rows = frame_vote_rows(frame, order_by="input", style=True)
    vts = votes(rows)
    assert len(vts) < len(rows)  # some AB/BA verdicts combined: the first verdict's counts are taken
    assert vts.style is not None and vts.style.shape == (len(vts), 8)
    counts = frame[list(STYLE_COLUMNS)].to_numpy()
    for k, r in enumerate(vts.row):
        a_side, b_side = counts[r, :4], counts[r, 4:]
        lo_name = vts.models[vts.lo[k]]
        want = np.r_[a_side, b_side] if frame["model_a"].iloc[r] == lo_name else np.r_[b_side, a_side]
        np.testing.assert_array_equal(vts.style[k], want)
    keep = np.arange(len(vts)) % 3 == 0
    np.testing.assert_array_equal(vts.take(keep).style, vts.style[keep])
    picks = np.array([4, 4, 0])
    np.testing.assert_array_equal(vts.take(picks).style, vts.style[picks])
    mask = rows.a % 2 == 0
    np.testing.assert_array_equal(rows.take(mask).style, rows.style[mask])


def test_every_verdict_its_own_vote_keeps_the_orientation():
    """The arena case (no two verdicts share graph, voter and pair) takes the fast path: same rule."""
    frame = pd.DataFrame({
        "judge": "j", "prompt_id": ["p1", "p2"], "variant": 0, "turn": 1,
        "model_a": ["zeta", "alpha"], "model_b": ["alpha", "zeta"], "winner": ["A", "B"],
        "source_line": [1, 2],
        "tokens_a": [100.0, 7.0], "tokens_b": [40.0, 9.0], "bold_a": [3.0, np.nan],
    })
    vts = votes(frame_vote_rows(frame, order_by="input", style=True))
    assert vts.models == ("alpha", "zeta")
    assert vts.style is not None
    # row 1: model_a zeta is hi -> alpha's (model_b's) counts first
    np.testing.assert_array_equal(vts.style[0], [40, np.nan, np.nan, np.nan, 100, np.nan, np.nan, 3])
    np.testing.assert_array_equal(vts.style[1], [7, np.nan, np.nan, np.nan, 9, np.nan, np.nan, np.nan])


def test_a_stored_dataset_reads_its_columns_and_nan_elsewhere(tmp_path, empty_store):
    """The store path: the counts a file gave, NaN where it gave none (no answer texts to count)."""
    from engine.ingest.importer import import_files

    frame = random_verdicts(4, n=40)
    frame.loc[:9, list(STYLE_COLUMNS)] = np.nan
    frame.drop(columns=["source_file", "source_line"]).to_csv(tmp_path / "v.csv", index=False)
    import_files(empty_store, [tmp_path / "v.csv"], "v")
    rows = store_vote_rows(empty_store, "v", style=True, order_by="input")
    np.testing.assert_array_equal(rows.style, frame[list(STYLE_COLUMNS)].to_numpy())
    assert store_vote_rows(empty_store, "v").style is None
