"""The keep-K curve resumed from the same selection's curves at other μ (``engine.experiments.curves.
keep_k_curve_chain``, what the Truncation page does on a μ move) is the curve made from scratch
(``keep_k_curve``), to the last digit, while fitting fewer K.

Each K's fits are warm-started from the previous K's, so a resumed curve may take an earlier curve's fits
only up to the first K whose kept graphs differ; a chain from other inputs (another seed, other graphs)
must give nothing. Data that separates: vicuna80 gpt-4 and all judges pooled (the μ steps keep the same
graphs for 5-80 of 80 and 68-480 of 480 leading K), and generated shapes (two judges, paraphrases, sampling
replicates, both orders, repeats, ties, a 70-model sparse set), over the page's 17 μ steps forward, back and
in jumps."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.experiments import curves
from engine.experiments.curves import keep_k_curve, keep_k_curve_chain
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.ranking.reference import reference_for
from engine.views.truncation_view import MU_STEPS
from tests.seam_data import Shape, stack_and_reference

PATH = [MU_STEPS[i] for i in (0, 1, 2, 3, 2, 16, 15, 12, 1)]  # forward, back, jumps
RESAMPLES = 6  # the chain does not depend on how many; few keep the file fast


def walk(stack, reference, mus, monkeypatch, seed=0, extra=()):
    """Resume along ``mus`` keeping the last four chains (as the page does) and compare every curve with
    the one made from scratch (made once per μ: a μ met again is compared with the same curve and counts
    its fits again); returns (fits made resumed, fits made from scratch)."""
    made = {"n": 0}
    real = curves.bt_scores_info

    def counted(wt, theta0=None):
        made["n"] += 1
        return real(wt, theta0)

    chains = list(extra)
    resumed_fits = fresh_fits = 0
    scratch: dict[float, tuple[pd.DataFrame, int]] = {}  # a μ met again: its curve from scratch and fits
    for mu in mus:
        monkeypatch.setattr(curves, "bt_scores_info", counted)
        made["n"] = 0
        got, chain = keep_k_curve_chain(stack, reference, mu=mu, per_category=False, resamples=RESAMPLES,
                                        seed=seed, resume=chains[-4:])
        resumed_fits += made["n"]
        if mu not in scratch:
            made["n"] = 0
            want = keep_k_curve(stack, reference, mu=mu, per_category=False, resamples=RESAMPLES, seed=seed)
            scratch[mu] = (want, made["n"])
        want, fits = scratch[mu]
        fresh_fits += fits
        monkeypatch.setattr(curves, "bt_scores_info", real)
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=f"keep-K curve at mu={mu}")
        chains.append(chain)
    return resumed_fits, fresh_fits


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_resumed_curve_is_the_curve_from_scratch_on_vicuna80(shipped_store, monkeypatch, judge):
    with shipped_store.session():
        stack = build_buckets(shipped_store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge=judge)).dense()
        reference = reference_for("vicuna80", None, shipped_store)[0]
    mus = PATH if judge else PATH[:4]
    resumed, fresh = walk(stack, reference, mus, monkeypatch)
    assert resumed < fresh  # the walk took fits from earlier curves


SHAPES = [
    Shape(seed=3, n_models=6, n_prompts=12, judges=2, paraphrases=1, samples=1, orders="both", tie_p=0.2,
          repeats=True),
    Shape(seed=8, n_models=6, n_prompts=16, sparse=True, paraphrases=1, orders="mixed"),
]


@pytest.mark.parametrize("shape", SHAPES, ids=["judges-variants-repeats", "sparse70"])
def test_resumed_curve_is_the_curve_from_scratch_on_generated_shapes(tmp_path_factory, monkeypatch, shape):
    stack, reference = stack_and_reference(tmp_path_factory.mktemp("chain"), shape)
    # a chain of another seed (other draws) offered first: it must give no fit
    other = keep_k_curve_chain(stack, reference, mu=MU_STEPS[0], per_category=False, resamples=RESAMPLES,
                               seed=1)[1]
    walk(stack, reference, PATH[:5], monkeypatch, extra=[other])
