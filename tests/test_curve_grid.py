"""The Truncation page's curve grid (``engine.views.curve_grid.CurveGrid``) gives the curves made from
scratch, to the last digit, whichever thread made them and in whatever order the sliders asked.

A slider move takes its curve from the grid: made then (with the cells earlier curves fitted), made
ahead of it by the warming thread, or being made by that thread and waited for. Each is compared with
``keep_k_view`` / ``mu_view`` called afresh on the same stack. Data that separates: vicuna80 judge gpt-4
and all judges pooled, and generated shapes (judges, paraphrases, sampling replicates, both orders, repeats,
ties, one pair per prompt, sparse graphs), along slider paths that step, jump and come back."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs
from stall_watch import watched_join

from engine.errors import LensError
from engine.experiments.curves import DEFAULT_MU_GRID
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.ranking.reference import reference_for
from engine.views.curve_grid import CurveGrid
from engine.views.truncation_view import MU_STEPS, default_keep_k, keep_k_view, mu_view
from tests.seam_data import Shape, shapes, stack_and_reference

RESAMPLES = 6  # the grid does not depend on how many; few keep the file fast


def fresh(stack, reference, kind: str, x: float) -> pd.DataFrame:
    """The curve as a slider move made it before the grid: from scratch."""
    if kind == "k":
        return keep_k_view(stack, reference, mu=x, resamples=RESAMPLES, seed=0)
    return mu_view(stack, reference, k=int(x), mus=DEFAULT_MU_GRID, resamples=RESAMPLES, seed=0)


def same(stack, reference, grid: CurveGrid, kind: str, x: float, what: str,
         wants: dict[tuple[str, float], pd.DataFrame | LensError]) -> None:
    """The grid's curve (or its refusal) is the one made from scratch (or the same refusal). ``wants``
    keeps each curve made from scratch (or its refusal) for the slide's later comparisons at the same
    setting: a curve the grid handed to a move is compared again once the thread has finished, against
    the same scratch curve, not one made a second time (113 curves from scratch were 69 settings)."""
    if (kind, x) not in wants:
        try:
            wants[kind, x] = fresh(stack, reference, kind, x)
        except LensError as exc:
            wants[kind, x] = exc
    want = wants[kind, x]
    if isinstance(want, LensError):
        with pytest.raises(LensError, match=re.escape(str(want))):
            grid.keep_k_frame(x) if kind == "k" else grid.mu_frame(int(x))
        return
    got = grid.keep_k_frame(x) if kind == "k" else grid.mu_frame(int(x))
    pd.testing.assert_frame_equal(got, want, check_exact=True, obj=f"{kind} curve at {x}{what}")


def slide(stack, reference, path: list[tuple[int, int]], reach: int = 2, mu_reach: int = 1) -> CurveGrid:
    """Move along ``path`` ((K, μ-step index) settings) as the page does: at each, take the two curves from
    the grid (whatever the warming thread has made) and have it warm the next ones; every curve taken is
    compared with the one made from scratch; then every curve the thread made is too."""
    grid = CurveGrid(stack, reference, curve_mus=DEFAULT_MU_GRID, resamples=RESAMPLES, seed=0)
    wants: dict[tuple[str, float], pd.DataFrame | LensError] = {}
    for k, i in path:
        same(stack, reference, grid, "k", MU_STEPS[i], "", wants)
        same(stack, reference, grid, "mu", k, "", wants)
        grid.warm(k, MU_STEPS[i], k_max=stack.T, mus=MU_STEPS, reach=reach, mu_reach=mu_reach)
    watched_join(grid, 120)
    for kind, x in sorted(grid._made):
        same(stack, reference, grid, kind, x, ", made by the warming thread", wants)
    return grid


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_grid_curves_are_the_curves_from_scratch_on_vicuna80(shipped_store, judge):
    with shipped_store.session():
        stack = build_buckets(shipped_store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge=judge)).dense()
        reference = reference_for("vicuna80", None, shipped_store)[0]
    k0 = default_keep_k(stack.T)
    # keep-K left, μ right (the benchmark's moves), a jump, and back to a setting met before
    path = [(k0, 8), (k0 - 1, 8), (k0 - 1, 9), (k0 - 2, 9), (k0 - 2, 10), (3, 16), (k0 - 1, 9)]
    grid = slide(stack, reference, path if judge else path[:3], reach=2 if judge else 1,
                 mu_reach=1 if judge else 0)
    assert grid.has("mu", k0 - 3 if judge else k0 - 2)  # the thread made a curve no move asked for


SETTINGS = settings(max_examples=1, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(shape=shapes(allow_prob=False), data=hs.data())
@example(shape=Shape(seed=3, n_models=6, n_prompts=12, judges=2, paraphrases=1, samples=1, orders="both",
                     tie_p=0.2, repeats=True), data=None)
@example(shape=Shape(seed=8, n_models=6, n_prompts=16, sparse=True, paraphrases=1, orders="mixed"), data=None)
def test_grid_curves_are_the_curves_from_scratch_on_generated_shapes(tmp_path_factory, shape, data):
    stack, reference = stack_and_reference(tmp_path_factory.mktemp("grid"), shape)
    T = max(1, stack.T)
    if data is None:
        path = [(max(1, T // 2), 8), (max(1, T // 2 - 1), 9), (1, 0), (T, 16), (max(1, T // 2), 8)]
    else:
        step = hs.tuples(hs.integers(1, T), hs.integers(0, len(MU_STEPS) - 1))
        path = data.draw(hs.lists(step, min_size=2, max_size=5), label="slider settings")
    slide(stack, reference, path)



def test_mu_steps_keeping_the_same_graphs_share_one_keep_k_curve(shipped_store):
    """vicuna80 gpt-4: μ steps whose keep-K orders are equal (a plain Python sort on (S_mu, graph-key rank)
    here) have equal curves from scratch; the grid makes one per order, and each μ's is its own from scratch
    (the steps of the shared orders and one step with an order of its own, asked last of its run first)."""
    from engine.experiments.curves import pool_scores
    from engine.graphs.cycles import cycle_capacity
    from engine.graphs.key_order import key_rank
    from engine.graphs.truncation import keep_pool

    with shipped_store.session():
        verdicts = shipped_store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge="gpt-4")
        stack = build_buckets(verdicts).dense()
        reference = reference_for("vicuna80", None, shipped_store)[0]
    pool = keep_pool(stack.keys, cycle_capacity(stack), "perturbed")[0].tolist()
    krank = key_rank(stack.keys)
    steps_of: dict[tuple[int, ...], list[float]] = {}
    for mu in MU_STEPS:
        s = pool_scores(stack, "perturbed", mu=mu)
        steps_of.setdefault(tuple(sorted(pool, key=lambda g: (s[g], krank[g]))), []).append(mu)
    shared = [mus for mus in steps_of.values() if len(mus) > 1]
    alone = [mus for mus in steps_of.values() if len(mus) == 1]
    assert shared and alone  # the data separates: some steps share an order, some do not
    runs = [*shared, alone[-1]]
    grid = CurveGrid(stack, reference, curve_mus=DEFAULT_MU_GRID, resamples=RESAMPLES, seed=0)
    for mus in runs:
        want = {mu: fresh(stack, reference, "k", mu) for mu in (mus[0], mus[-1])}
        pd.testing.assert_frame_equal(want[mus[0]], want[mus[-1]], check_exact=True)
        for mu in reversed(mus):  # the last step of a run first: the order's curve is not the first μ's
            got = grid.keep_k_frame(mu)
            pd.testing.assert_frame_equal(got, want[mus[-1]], check_exact=True, obj=f"μ {mu}")
        assert len({id(grid._made[("k", mu)].result()) for mu in mus}) == 1, mus  # one curve per order
    assert len({id(f.result()) for (kind, _), f in grid._made.items() if kind == "k"}) == len(runs)


def test_the_warming_plan_puts_the_keep_k_curves_ahead_of_the_mu_slider_first():
    """``warm_plan`` makes the curves the old plan made (the two settings', the μ curves at K ± d, the keep-K
    curves at the μ steps ± 1 … ± mu_reach), each once; the keep-K curves come one per distance, those in the
    direction of travel first; ``CurveGrid.warm`` turns that direction when the μ slider does."""
    from engine.views.curve_grid import warm_plan

    k = 30
    cases = ((8, 1, 8, 2), (8, -1, 8, 2), (16, 1, 3, 2), (1, -1, 0, 3), (0, 1, 2, 0))
    for here, ahead, reach, mu_reach in cases:
        plan = warm_plan(k, MU_STEPS, here, ahead, k_max=33, reach=reach, mu_reach=mu_reach)
        want_mu = {("mu", j) for d in range(0, reach + 1) for j in (k - d, k + d) if 1 <= j <= 33}
        near = [here + s * d for s in (ahead, -ahead) for d in range(1, mu_reach + 1)]
        want_k = [("k", MU_STEPS[i]) for i in near if 0 <= i < len(MU_STEPS)]
        assert plan[:2] == [("k", MU_STEPS[here]), ("mu", k)]
        assert len(plan) == len(set(plan)) == 1 + len(want_mu) + len(want_k)
        assert {p for p in plan if p[0] == "mu"} == want_mu
        assert [p for p in plan[1:] if p[0] == "k"] == want_k
        for d, item in enumerate(want_k, start=1):  # after the μ curves of its distance, before the next's
            before = {("mu", j) for j in (k - d, k + d) if d <= reach and 1 <= j <= 33}
            after = {("mu", j) for j in (k - d - 1, k + d + 1) if d + 1 <= reach and 1 <= j <= 33}
            assert all(plan.index(b) < plan.index(item) for b in before)
            assert all(plan.index(a) > plan.index(item) for a in after)
    # no stack: the thread's every item fails at once (an error is not kept); the direction is what is read
    grid = CurveGrid(None, None, curve_mus=DEFAULT_MU_GRID, resamples=RESAMPLES, seed=0)
    seen = []
    for i in (8, 8, 9, 10, 10, 9, 9, 11):  # up, up, keep-K move, down, keep-K move, up
        grid.warm(k, MU_STEPS[i], k_max=33, mus=MU_STEPS)
        seen.append(grid._ahead)
    watched_join(grid, 60)
    assert seen == [1, 1, 1, 1, 1, -1, -1, 1]
