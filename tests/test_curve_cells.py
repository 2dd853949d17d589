"""The sensitivity curves' cells and their shared fits (``engine.experiments.curves.FitCache``): a curve made
with the fits of earlier curves is the curve made from scratch, to the last digit, while fitting fewer cells.

A cell is one group's kept graphs at one x with its draw size; its fits are the point fit from zeros and each
draw's fit started from that point fit. The tests read a cell's fits back against fits made another way (the
draws chosen by sorting the uniforms, each matrix summed and fitted alone), check that a fit does not depend
on the batch it was made in (what lets cells of different curves share fits), and walk the page's μ steps
forward, back and in jumps with μ curves between, per category and pooled. Data that separates: vicuna80
gpt-4 and all judges pooled (μ steps keep the same graphs at many K), generated shapes (two judges,
paraphrases, sampling replicates, both orders, repeats, ties, a 70-model sparse set)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from engine.experiments import curves
from engine.experiments.batch_fits import flat_matrices
from engine.experiments.curves import FitCache, keep_k_curve, keep_k_selections, mu_curve
from engine.experiments.draws import keep_draw_uniforms
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.rankers.bt import fit_bt_batch_info
from engine.ranking.reference import reference_for
from engine.views.truncation_view import MU_STEPS
from tests.seam_data import Shape, stack_and_reference

PATH = [MU_STEPS[i] for i in (0, 1, 2, 3, 2, 16, 15, 12, 1)]  # forward, back, jumps
RESAMPLES = 6  # sharing does not depend on how many; few keep the file fast


class Counted:
    """Counts the cells ``_fit_cells`` fits (installed with monkeypatch)."""

    def __init__(self, monkeypatch) -> None:
        self.n = 0
        real = curves._fit_cells

        def counted(cells, *args, **kwargs):
            self.n += len(cells)
            return real(cells, *args, **kwargs)

        monkeypatch.setattr(curves, "_fit_cells", counted)


def vicuna80(store, judge):
    with store.session():
        stack = build_buckets(store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge=judge)).dense()
        reference = reference_for("vicuna80", None, store)[0]
    return stack, reference


def walk(stack, reference, mus, monkeypatch, *, per_category=False, ks=(), cache=None):
    """Make the keep-K curve at each of ``mus`` and then the μ curve at each of ``ks`` with one shared cache,
    compare each with the curve made from scratch (no cache), and return (cells fitted shared, from
    scratch)."""
    counted = Counted(monkeypatch)
    cache = FitCache() if cache is None else cache
    shared = fresh = 0
    kw = {"per_category": per_category, "resamples": RESAMPLES, "seed": 0}
    def make(what, x, **more):
        return (keep_k_curve(stack, reference, mu=x, **kw, **more) if what == "k" else
                mu_curve(stack, reference, MU_STEPS, k=x, **kw, **more))

    for what, x in [("k", mu) for mu in mus] + [("mu", k) for k in ks]:
        counted.n = 0
        got = make(what, x, fits=cache)
        shared += counted.n
        counted.n = 0
        want = make(what, x)
        fresh += counted.n
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=f"{what} curve at {x}")
    return shared, fresh


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_shared_fits_give_the_curves_from_scratch_on_vicuna80(shipped_store, monkeypatch, judge):
    stack, reference = vicuna80(shipped_store, judge)
    mus, ks = (PATH, (40, 39, 1, 80)) if judge else (PATH[:4], (240, 1))
    shared, fresh = walk(stack, reference, mus, monkeypatch, ks=ks)
    assert shared < fresh / 2  # the walk took most cells from earlier curves


def test_per_category_curves_share_fits_and_a_mu_curve_after_its_keep_k_curves_fits_nothing(
        shipped_store, monkeypatch):
    stack, reference = vicuna80(shipped_store, "gpt-4")
    cache = FitCache()
    shared, fresh = walk(stack, reference, MU_STEPS, monkeypatch, per_category=True, cache=cache)
    assert shared < fresh
    counted = Counted(monkeypatch)
    for k in (1, 5, 10):  # the keep-K curves at every μ step made every cell of these μ curves
        mu_curve(stack, reference, MU_STEPS, k=k, resamples=RESAMPLES, seed=0, fits=cache)
    assert counted.n == 0


SHAPES = [
    Shape(seed=3, n_models=6, n_prompts=12, judges=2, paraphrases=1, samples=1, orders="both", tie_p=0.2,
          repeats=True),
    Shape(seed=8, n_models=6, n_prompts=16, sparse=True, paraphrases=1, orders="mixed"),
]


@pytest.mark.parametrize("shape", SHAPES, ids=["judges-variants-repeats", "sparse70"])
def test_shared_fits_give_the_curves_from_scratch_on_generated_shapes(tmp_path_factory, monkeypatch, shape):
    stack, reference = stack_and_reference(tmp_path_factory.mktemp("cells"), shape)
    cache = FitCache()
    # a cache bound to another seed's draws first: it neither gives nor takes a cell
    other = FitCache()
    keep_k_curve(stack, reference, mu=MU_STEPS[0], per_category=False, resamples=RESAMPLES, seed=1,
                 fits=other)
    before = len(other)
    walk(stack, reference, PATH[:5], monkeypatch, ks=(1, 3), cache=other)
    assert len(other) == before
    for per_category in (False, True):
        walk(stack, reference, PATH[:5], monkeypatch, per_category=per_category, ks=(1, 3), cache=cache)


def test_a_cache_too_small_for_one_curve_gives_the_same_curves(shipped_store, monkeypatch):
    stack, reference = vicuna80(shipped_store, "gpt-4")
    tiny = FitCache(max_bytes=1)  # keeps one cell at a time: every other cell is fitted again, alone
    walk(stack, reference, PATH[:3], monkeypatch, ks=(40,), cache=tiny)
    assert len(tiny) == 1


def test_a_cells_fits_are_its_point_fit_from_zeros_and_each_draw_from_the_point(shipped_store):
    """Every cell of a keep-K curve, read back from the cache, against fits made another way: the kept
    graphs' matrices summed one by one, the draws chosen by sorting the group's uniforms (the m smallest),
    each matrix fitted alone."""
    stack, reference = vicuna80(shipped_store, None)
    R = 5
    cache = FitCache()
    mu = MU_STEPS[5]
    keep_k_curve(stack, reference, mu=mu, per_category=False, resamples=R, seed=3, fits=cache)
    ks, pools, _, krank, kept_of = keep_k_selections(stack, mu=mu, per_category=False)
    pool = pools[curves.POOLED]
    wflat = flat_matrices(stack)["wtilde"]
    uni = keep_draw_uniforms(3, curves.POOLED, pool.size, R)
    n = stack.n
    for xi in (0, 1, 2, 7, 100, len(ks) - 1):
        k = ks[xi]
        kept = np.sort(kept_of[(xi, curves.POOLED)])
        kept = kept[np.argsort(krank[kept], kind="stable")]
        m = curves.draw_size(k, kept.size)
        fits, ok = cache.get(curves.cell_key(curves.POOLED, kept, m))
        point = fit_bt_batch_info(sum(wflat[g] for g in kept).reshape(1, n, n))
        np.testing.assert_array_equal(fits[0], point.scores[0])
        where = {int(g): i for i, g in enumerate(pool)}
        for r in range(R):
            u = uni[r, [where[int(g)] for g in kept]]
            drawn = kept[np.argsort(u, kind="stable")[:m]]
            one = fit_bt_batch_info(sum(wflat[g] for g in drawn).reshape(1, n, n), theta0=point.scores)
            np.testing.assert_array_equal(fits[1 + r], one.scores[0])
            assert ok[1 + r] == one.converged[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hs.integers(0, 2**32 - 1), n=hs.sampled_from([3, 5, 9, 14, 30]), rows=hs.integers(1, 40),
       chunk=hs.integers(1, 17), warm=hs.booleans())
def test_a_fit_does_not_depend_on_the_batch_it_is_in(seed, n, rows, chunk, warm):
    """Newton's fits of a batch, in batches of any size (ones that stop at once or take many iterations,
    regularised or not, warm-started or from zeros), equal each matrix fitted alone, bit for bit: what lets
    cells fitted with different cells be shared."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, rng.uniform(0.1, 3), n)
    p = 1 / (1 + np.exp(strength[None, :] - strength[:, None]))
    meets = rng.poisson(rng.uniform(0.2, 4), (rows, n, n)) * (rng.random((rows, n, n)) < rng.uniform(0.3, 1))
    wins = rng.binomial(meets, p)
    w = (wins + (meets - wins).transpose(0, 2, 1)).astype(float)
    w += 0.5 * rng.integers(0, 2, w.shape) * (rng.random() < 0.5)  # ties, half a win each, sometimes
    w[:, np.arange(n), np.arange(n)] = 0
    theta0 = rng.normal(0, 1, (rows, n)) if warm else None
    batch = fit_bt_batch_info(w, theta0=theta0, chunk=chunk)
    for r in range(rows):
        one = fit_bt_batch_info(w[r:r + 1], theta0=None if theta0 is None else theta0[r:r + 1])
        np.testing.assert_array_equal(batch.scores[r], one.scores[0])
        assert batch.converged[r] == one.converged[0]


@pytest.mark.parametrize("n, rows", [(9, 2000), (30, 600), (70, 260)])
def test_a_fit_in_a_big_batch_is_the_fit_alone(n, rows):
    """Batches as big as the curves' (thousands of 9-model fits, hundreds of 70-model ones; einsum, numpy's
    sums and BLAS products change their order of summation with such sizes): a sample of the rows, each
    fitted alone, the same bits."""
    rng = np.random.default_rng(n)
    strength = rng.normal(0, 1, n)
    p = 1 / (1 + np.exp(strength[None, :] - strength[:, None]))
    meets = rng.poisson(2, (rows, n, n)) * (rng.random((rows, n, n)) < 0.4)
    wins = rng.binomial(meets, p)
    w = (wins + (meets - wins).transpose(0, 2, 1)).astype(float)
    w[:, np.arange(n), np.arange(n)] = 0
    theta0 = np.where(rng.random((rows, 1)) < 0.5, rng.normal(0, 1, (rows, n)), 0.0)
    batch = fit_bt_batch_info(w, theta0=theta0)
    for r in rng.choice(rows, 12, replace=False):
        one = fit_bt_batch_info(w[r:r + 1], theta0=theta0[r:r + 1])
        np.testing.assert_array_equal(batch.scores[r], one.scores[0])


@pytest.mark.parametrize("n", [2, 3, 9, 40, 120])
def test_per_model_sums_are_the_same_bits_by_numpy_and_by_the_sparse_product(monkeypatch, n):
    """``_by_model``'s two ways (scipy's sparse product for big batches or once scipy.sparse is loaded, a
    numpy gather and running sum for a command's small fits): each model's terms in pair order from zero,
    so the same bits, on values over 30 orders of magnitude of both signs."""
    import sys

    from engine.rankers import bt_solvers

    rng = np.random.default_rng(n)
    pairs = n * (n - 1) // 2
    values = rng.normal(size=(37, pairs)) * 10.0 ** rng.integers(-15, 15, (37, pairs))
    for signed in (True, False):
        sparse = np.asarray(bt_solvers._sparse_incidence(n, signed) @ values.T).T
        monkeypatch.setattr(bt_solvers, "SPARSE_FROM", 10**12)
        monkeypatch.delitem(sys.modules, "scipy.sparse", raising=False)
        by_numpy = bt_solvers._by_model(values, n, signed)
        monkeypatch.undo()
        np.testing.assert_array_equal(by_numpy, sparse)

