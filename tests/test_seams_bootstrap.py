"""Bootstrap units and interval edges, on data where the choices must show.

- One prompt judged by several judges: resampling prompts redraws that one prompt every time, so
  every resample is the data itself and every interval collapses onto the point fit; resampling
  graphs (judges) does not. Holds for every count ranker (batched or refitted) and every graph ranker.
- Prompts whose two judges disagree on the prompt's one pair: every prompt resample keeps wins
  symmetric (W = Wᵀ in each resample), graph resamples do not; votes differ from both.
- Rank intervals are integer order statistics taken outward (lower / higher), so each covers at
  least ``level`` of the resampled ranks (closed form: ⌈(1-q)(B-1)⌉ - ⌊q(B-1)⌋ + 1 ≥ level·B).
- Soft PNT's tie band is closed at both edges: P exactly at ``low`` or ``high`` is a tie.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verdict_frames import canonical_frame

from engine.graphs.stack import build_stack
from engine.rankers.objects import RANKER_OBJECTS
from engine.rankers.votes import votes as make_votes
from engine.ranking.bootstrap import BootstrapResult, bootstrap
from engine.ranking.count_bootstrap import bootstrap_counts, resampled_counts
from engine.ranking.leaderboard import leaderboard
from engine.ranking.vote_query import frame_vote_rows
from tests.seam_data import imported, shapes

COUNT_RANKERS = tuple(n for n, o in RANKER_OBJECTS.items() if o.counts)
GRAPH_RANKERS = tuple(n for n, o in RANKER_OBJECTS.items() if not o.counts)


def canonical(rows: list[dict]) -> pd.DataFrame:
    """A canonical verdict frame (the store's columns and dtypes) from partial rows."""
    return canonical_frame(rows)


def one_prompt_three_judges() -> pd.DataFrame:
    """One prompt, four models, every pair judged by three judges who disagree on most pairs."""
    models = ["w", "x", "y", "z"]
    table = {0: "AAABAB", 1: "BABAAt", 2: "ABtBBA"}  # judge → winner per pair, in pair order
    rows = [{"judge": f"j{j}", "prompt_id": "p1", "model_a": a, "model_b": b,
             "winner": {"t": "tie"}.get(table[j][k], table[j][k])}
            for j in table for k, (a, b) in enumerate(itertools.combinations(models, 2))]
    return canonical(rows)


@pytest.mark.parametrize("ranker", COUNT_RANKERS)
def test_count_bootstrap_by_prompt_redraws_the_one_prompt(ranker):
    """Kills 'unit=prompt resamples graphs' (count_bootstrap.unit_patterns / _refits keyed by graph)."""
    vts = make_votes(frame_vote_rows(one_prompt_three_judges()))
    params = {"order": "prompt"} if ranker == "elo" else {}
    by_prompt = bootstrap_counts(vts, ranker, 30, 4, unit="prompt", **params)
    assert by_prompt.unit == "prompt"
    point = by_prompt.samples[0]
    np.testing.assert_allclose(by_prompt.samples, np.broadcast_to(point, by_prompt.samples.shape), atol=1e-9,
                               err_msg=f"{ranker}: a prompt resample of the only prompt is the data itself")
    by_graph = bootstrap_counts(vts, ranker, 30, 4, unit="graph", **params)
    assert np.ptp(by_graph.samples, axis=0).max() > 1e-6, f"{ranker}: three judges, resampled, must vary"


@pytest.mark.parametrize("ranker", GRAPH_RANKERS + ("bt",))
def test_graph_bootstrap_by_prompt_redraws_the_one_prompt(ranker):
    stack = build_stack(one_prompt_three_judges())
    assert stack.T == 3
    by_prompt = bootstrap(stack, ranker, 20, 4, unit="prompt")
    np.testing.assert_allclose(
        by_prompt.samples,
        np.broadcast_to(by_prompt.samples[0], by_prompt.samples.shape),
        atol=1e-9,
        err_msg=ranker,
    )
    by_graph = bootstrap(stack, ranker, 20, 4, unit="graph")
    assert np.ptp(by_graph.samples, axis=0).max() > 1e-6, ranker


def disagreeing_judges(n_prompts: int, n_models: int, seed: int) -> pd.DataFrame:
    """Each prompt compares one pair; judge 0 says one model won, judge 1 the other."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_prompts):
        a, b = rng.choice(n_models, 2, replace=False)
        first = "A" if rng.random() < 0.5 else "B"
        for j, w in enumerate((first, {"A": "B", "B": "A"}[first])):
            rows.append(
                {"judge": f"j{j}", "prompt_id": str(q), "model_a": f"m{a}", "model_b": f"m{b}", "winner": w}
            )
    return canonical(rows)


@settings(max_examples=10, deadline=None)
@given(n_prompts=st.integers(2, 30), n_models=st.integers(2, 6), seed=st.integers(0, 2**16))
def test_prompt_resamples_keep_disagreeing_judges_balanced(n_prompts, n_models, seed):
    """Every prompt holds one win each way, so a resample of prompts has W = Wᵀ; of graphs it does not
    (somewhere in 40 resamples) and of votes neither."""
    vts = make_votes(frame_vote_rows(disagreeing_judges(n_prompts, n_models, seed)))
    rng = np.random.default_rng(seed)
    for W, _ in resampled_counts(vts, "prompt", 40, rng):
        np.testing.assert_array_equal(W, W.swapaxes(1, 2))
    for unit in ("graph", "vote"):
        asym = [bool((W != W.swapaxes(1, 2)).any()) for W, _ in resampled_counts(vts, unit, 40, rng)]
        assert any(asym), unit


def test_prompt_and_graph_units_give_different_intervals_on_variants():
    """Where prompts hold several graphs (variants), the two units must not give the same intervals."""
    rng = np.random.default_rng(11)
    rows = []
    for q, v, (a, b) in itertools.product(range(12), range(3), itertools.combinations(range(4), 2)):
        rows.append(
            {
                "prompt_id": str(q),
                "variant": v,
                "variant_kind": "original" if v == 0 else "paraphrase",
                "model_a": f"m{a}",
                "model_b": f"m{b}",
                "winner": rng.choice(["A", "B", "tie"], p=[0.5, 0.3, 0.2]),
            }
        )
    vts = make_votes(frame_vote_rows(canonical(rows)))
    widths = {}
    for unit in ("graph", "prompt", "vote"):
        ci = bootstrap_counts(vts, "bt", 200, 1, unit=unit).scores_ci
        widths[unit] = (ci["high"] - ci["low"]).to_numpy()
    assert not np.allclose(widths["graph"], widths["prompt"])
    assert not np.allclose(widths["vote"], widths["graph"])


def coverage_ok(res: BootstrapResult) -> None:
    ci = res.ranks_ci
    r = res.rank_samples
    inside = ((r >= ci["low"].to_numpy()[None, :]) & (r <= ci["high"].to_numpy()[None, :])).mean(axis=0)
    assert (inside >= res.level - 1e-12).all(), inside


def test_rank_interval_is_outward_order_statistics_closed_form():
    """Kills 'higher → lower' in BootstrapResult._ci: B = 10, level 0.95 puts the upper end at the
    10th smallest rank (⌈0.975·9⌉ = 9, 0-based), the lower end at the smallest (⌊0.025·9⌋ = 0)."""
    ranks = np.array([[1, 4], [1, 3], [2, 3], [1, 4], [1, 2], [1, 4], [2, 3], [1, 4], [1, 3], [3, 1]])
    res = BootstrapResult("bt", ("a", "b"), 10, 0, 0.95, ranks.astype(float), ranks, "hand")
    ci = res.ranks_ci
    for m, col in zip(("a", "b"), ranks.T, strict=True):
        s = np.sort(col)
        assert (ci.loc[m, "low"], ci.loc[m, "high"]) == (s[0], s[9])
    coverage_ok(res)


@settings(max_examples=8, deadline=None)
@given(B=st.integers(2, 60), level=st.sampled_from((0.5, 0.8, 0.9, 0.95)), seed=st.integers(0, 2**16))
def test_rank_intervals_cover_level_of_the_resamples(B, level, seed):
    """On a real bootstrap of random tournaments: each model's rank interval holds ≥ level of its ranks."""
    rng = np.random.default_rng(seed)
    rows = [
        {"prompt_id": str(q), "model_a": f"m{a}", "model_b": f"m{b}", "winner": rng.choice(["A", "B", "tie"])}
        for q in range(8)
        for a, b in itertools.combinations(range(5), 2)
    ]
    stack = build_stack(canonical(rows))
    coverage_ok(bootstrap(stack, "bt", B, seed, level=level))
    coverage_ok(
        bootstrap_counts(make_votes(frame_vote_rows(canonical(rows))), "winrate", B, seed, level=level)
    )


def soft_triangle(p_xy: float, p_yz: float, p_xz: float) -> pd.DataFrame:
    """One graph over x, y, z whose judge gave P(A wins) for each pair in both orders alike."""
    rows = []
    for (a, b), p in zip((("x", "y"), ("y", "z"), ("x", "z")), (p_xy, p_yz, p_xz), strict=True):
        w = "A" if p > 0.5 else "B" if p < 0.5 else "tie"
        rows.append({"model_a": a, "model_b": b, "winner": w, "prob_a": p, "order": "AB", "prompt_id": "1"})
        rows.append({"model_a": b, "model_b": a, "winner": {"A": "B", "B": "A"}.get(w, w), "prob_a": 1.0 - p,
                     "order": "BA", "prompt_id": "1"})
    return canonical(rows)


@pytest.mark.parametrize("edge", ["low", "high"])
def test_soft_tie_band_is_closed_at_both_edges(edge):
    """Kills 'p >= low → p > low' (and 'p <= high → p < high') in nontransitivity._soft_edges: x beats y
    clearly, y beats z clearly, and P(x beats z) sits exactly on a band edge, so x–z is a tie and the
    triple is a chain with tied ends; just below the band it is a strict 3-cycle, just above it
    transitive (by hand)."""
    from engine.diagnostics.nontransitivity import pnt_summary, soft_stack

    low, high = 0.375, 0.625  # exact binary fractions, so the two orders' mean is exactly p

    def kinds(p_xz: float) -> tuple[float, int, int]:
        got = pnt_summary(build_stack(soft_triangle(0.875, 0.875, p_xz)), source="soft", tie_band=(low, high))
        row = got.iloc[0]
        return float(row["pnt"]), int(row["cycle"]), int(row["tied_ends"])

    p = low if edge == "low" else high
    soft = soft_stack(build_stack(soft_triangle(0.875, 0.875, p)), (low, high))
    x, z = soft.models.index("x"), soft.models.index("z")
    assert soft.adj[0, x, z] and soft.adj[0, z, x], "P on the band's edge is a tie: both edges"
    assert kinds(p) == (1.0, 0, 1)
    assert kinds(low - 0.125) == (1.0, 1, 0)  # z beats x: x > y > z > x
    assert kinds(high + 0.125) == (0.0, 0, 0)  # x beats z: transitive


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes(allow_sparse=False, allow_prob=False))
def test_bootstrap_units_change_the_intervals_where_prompts_hold_several_graphs(tmp_path_factory, shape):
    """On a stored dataset whose prompts hold several graphs (paraphrases, a second judge): the board's
    bootstrap by graph, by prompt and by vote resample different things, so their resampled scores
    differ, on the count path (bt) and the graph path (borda); each board says which unit it used."""
    shape = replace(shape, paraphrases=max(1, shape.paraphrases), one_pair=False)
    store, _, _ = imported(tmp_path_factory.mktemp("seam"), shape)
    try:
        for ranker, units in (("bt", ("graph", "prompt", "vote")), ("borda", ("graph", "prompt"))):
            samples = {}
            for unit in units:
                board = leaderboard(store, "seam", ranker=ranker, bootstrap=40, seed=3, bootstrap_unit=unit)
                assert board.params["bootstrap_unit"] == unit
                samples[unit] = board.bootstrap.samples
            for a, b in itertools.combinations(units, 2):
                assert not np.array_equal(samples[a], samples[b]), (ranker, a, b)
    finally:
        store.close()
