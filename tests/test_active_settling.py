"""``cycles`` re-judges an edge in bad triads until its verdicts settle (issue 27, point 5's re-judging goal).

The settling rule (``settled_votes``) is checked against its definition written as a loop over outcomes, and
``cycles``' choice against a pandas count of the revealed votes per edge: every unsettled edge in a bad triad
is asked once (the one with two split verdicts too: its third call decides it), no settled edge is, even when
it sits in bad triads.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.judging.active.fit import Revealed
from engine.judging.active.pool import pool_from_verdicts
from engine.judging.active.select import edge_bad_triads, select, settled_votes


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=20))
def test_settled_is_a_confirmed_majority(counts):
    arr = np.array(counts, dtype=float)
    got = settled_votes(arr[:, 0], arr[:, 1], arr[:, 2])
    for row, g in zip(counts, got, strict=True):
        want = any(c >= 2 and c > sum(row) - c for c in row)
        assert bool(g) == want, row


def _three_judges(models: int, prompts: int, seed: int) -> pd.DataFrame:
    """Every pair on every prompt judged by three judges (one order), winners close to coin flips so the
    graphs hold bad triads and the judges often disagree."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(prompts):
        for i, j in itertools.combinations(range(models), 2):
            for judge in ("J", "K", "L"):
                u = rng.random()
                w = "tie" if u < 0.05 else ("A" if u < 0.55 else "B")
                rows.append({"prompt_id": f"p{p}", "variant": 0, "turn": 1, "model_a": f"m{i}",
                             "model_b": f"m{j}", "winner": w, "order": "AB", "judge": judge})
    return pd.DataFrame(rows)


def test_cycles_asks_unsettled_edges_in_bad_triads_and_never_settled_ones():
    frame = _three_judges(6, 8, seed=5)
    pool = pool_from_verdicts(frame)
    rng = np.random.default_rng(1)
    first = np.flatnonzero(frame["judge"] == "J")
    second = np.flatnonzero((frame["judge"] == "K") & (rng.random(len(frame)) < 0.6))
    items = np.concatenate([first, second])
    rev = Revealed.empty(pool)
    rev.record_winners(items, frame["winner"].to_numpy()[items])
    # votes per edge from the frame, by pandas
    seen = frame.iloc[items]
    votes = seen.groupby(["prompt_id", "model_a", "model_b"])["winner"].value_counts().unstack(fill_value=0)
    top = votes.max(axis=1)
    settled = (top >= 2) & (2 * top > votes.sum(axis=1))
    insts, bad = edge_bad_triads(pool, rev)

    def instance(prompt, a, b) -> int:
        rows = (frame["prompt_id"] == prompt) & (frame["model_a"] == a) & (frame["model_b"] == b)
        return int(pool.instance[np.flatnonzero(rows)[0]])

    n_votes = votes.sum(axis=1)
    key = {instance(*edge): (bool(settled[edge]), int(bad[np.searchsorted(insts, instance(*edge))]))
           for edge in settled.index}
    want = {i for i, (s, b) in key.items() if not s and b > 0}
    settled_in_triads = {i for i, (s, b) in key.items() if s and b > 0}
    assert want and settled_in_triads  # both kinds exist, so the rule is what tells them apart
    got = select("cycles", pool, rev, len(want), np.random.default_rng(0))
    asked = set(pool.instance[got].tolist())
    assert len(got) == len(asked) and asked == want  # one call per unsettled edge in a bad triad
    # among them edges whose two verdicts split: their third call decides them
    split = {instance(*edge) for edge in settled.index if n_votes[edge] == 2 and not settled[edge]}
    assert split & want
