"""The Truncation page's curve grid (``engine.views.curve_grid.CurveGrid``) gives the curves made from
scratch, to the last digit, whichever thread made them and in whatever order the sliders asked.

A slider move takes its curve from the grid: made then (resumed from earlier keep-K curves' fits), made
ahead of it by the warming thread, or being made by that thread and waited for. Each is compared with
``keep_k_view`` / ``mu_view`` called afresh on the same stack. Data that separates: vicuna80 judge gpt-4
and all judges pooled, and generated shapes (judges, paraphrases, sampling replicates, both orders, repeats,
ties, one pair per prompt, sparse graphs), along slider paths that step, jump and come back."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs

from engine.errors import LensError
from engine.experiments.curves import DEFAULT_MU_GRID
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.ranking.reference import reference_for
from engine.views.curve_grid import CurveGrid
from engine.views.truncation_view import default_keep_k, keep_k_view, mu_view
from tests.seam_data import Shape, shapes, stack_and_reference

MU_STEPS = [float(f"{v:.3g}") for v in np.logspace(-2, 2, 17)]  # the page's μ slider steps
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
    grid.join(120)
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

