"""Elo's bootstrap in one pass over the votes (``engine.rankers.elo.elo_ratings_resampled``) against the
per-resample refit it replaced: the same draws, the same numbers.

The second path here is the refit written out: the resample's draws taken from the same generator in the
same order, every vote repeated as often as its unit was drawn, in the votes' order, and the sequential
``Elo.fit_counts`` run on that resample's votes. The shapes separate the paths: several judges and
variants (units holding several votes, so a unit's draw repeats each of its votes), presentation orders,
repeated battles, one pair per prompt, a sparse 70-model set, and the three units and orders.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.rankers.elo as elo_module
from engine.rankers.elo import elo_ratings, elo_ratings_resampled
from engine.rankers.objects import ranker_object
from engine.rankers.votes import votes as make_votes
from engine.ranking.count_board import leaderboard_from_votes
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.vote_query import frame_vote_rows
from tests.conftest import REPO
from tests.seam_data import Shape, verdicts


def refit_samples(v, B: int, seed: int, unit: str, params: dict) -> np.ndarray:
    """The per-resample refit: draws as ``bootstrap_counts`` makes them, one Elo fit per resample."""
    rng = np.random.default_rng(seed)
    if unit == "vote":
        unit_of, U = np.arange(len(v)), len(v)
    else:
        _, unit_of = np.unique(v.graph if unit == "graph" else v.prompt, return_inverse=True)
        unit_of = unit_of.ravel()
        U = int(unit_of.max()) + 1
    obj = ranker_object("elo")
    rows = []
    for _ in range(B):
        c = rng.multinomial(U, np.full(U, 1.0 / U))[unit_of]
        sub = v.take(np.repeat(np.arange(len(v)), c))
        rows.append(obj.fit_counts(sub.fit_pair_counts(), sub, **params).scores.reindex(list(v.models))
                    .to_numpy(np.float64))
    return np.vstack(rows)


SHAPES = (
    Shape(seed=3, n_models=6, n_prompts=5, judges=3, paraphrases=1, samples=1, orders="both", repeats=True),
    Shape(seed=4, n_models=5, n_prompts=7, judges=2, turns=2, orders="mixed", annotators=2),
    Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True, orders="AB", repeats=True),
    Shape(seed=6, n_prompts=40, sparse=True, judges=2, paraphrases=1, orders="none"),
)


@pytest.mark.parametrize("shape", SHAPES, ids=["judges-variants", "annotators", "one-pair", "sparse70"])
@pytest.mark.parametrize("unit", ["vote", "graph", "prompt"])
@pytest.mark.parametrize("compiled_from", [None, 0], ids=["by-size", "compiled"])
def test_batched_elo_bootstrap_equals_the_refit(shape, unit, compiled_from, monkeypatch):
    """Every resample's scores to the bit (the same operations in the same order), and the board says
    the batched path ran; once as the board picks the kernel (the compiled loop from the first vote,
    ``COMPILED_FROM_VOTES`` = 0), once with it forced."""
    if compiled_from is not None:
        monkeypatch.setattr(elo_module, "COMPILED_FROM_VOTES", compiled_from)
    v = make_votes(frame_vote_rows(verdicts(shape)))
    got = bootstrap_counts(v, "elo", 12, 7, unit=unit, order="input")
    assert got.method.startswith("batched:"), got.method
    want = refit_samples(v, 12, 7, unit, {"order": "input"})
    np.testing.assert_array_equal(got.samples, want)


def test_board_intervals_follow_the_board_models():
    """A board whose selection leaves a model without votes: the intervals sit on the board's models,
    the same as the refit's (its columns are picked by name, not position)."""
    shape = SHAPES[3]
    v = make_votes(frame_vote_rows(verdicts(shape)))
    keep = np.isin(v.lo, [0, 1, 2, 3, 4, 5]) & np.isin(v.hi, np.arange(60))  # some models lose every vote
    sub = v.take(keep)
    board = leaderboard_from_votes(sub, ranker="elo", bootstrap=9, seed=2)
    names = tuple(board.table["model"])
    assert len(names) < sub.n
    want = refit_samples(sub, 9, 2, "graph", {})
    cols = [list(sub.models).index(m) for m in board.bootstrap.models]
    np.testing.assert_array_equal(board.bootstrap.samples, want[:, cols])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 9), V=st.integers(1, 60), B=st.integers(1, 7),
       chunk=st.integers(1, 9), most=st.integers(0, 4), compiled=st.booleans())
def test_kernel_equals_sequential_elo_per_resample(seed, n, V, B, chunk, most, compiled):
    """Both kernels alone, any chunk size (padding steps at every chunk end of the numpy loop), zero
    draws and long runs of one vote: each resample equals ``elo_ratings`` on its repeated outcomes."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n - 1, V)
    j = i + 1 + rng.integers(0, 10**6, V) % (n - 1 - i)
    s = rng.choice([0.0, 0.5, 1.0], V)
    reps = rng.integers(0, most + 1, (B, V))
    got = elo_ratings_resampled(i, j, s, n, lambda v0, v1: reps[:, v0:v1], k=16.0, chunk=chunk,
                                compiled=compiled)
    for b in range(B):
        idx = np.repeat(np.arange(V), reps[b])
        _same_ratings(got[b], elo_ratings(i[idx], j[idx], s[idx], n, k=16.0), compiled)


def test_a_shuffled_elo_keeps_one_refit_per_resample():
    """``seed`` shuffles each resample its own way: the refit runs, as before, and says so."""
    v = make_votes(frame_vote_rows(verdicts(SHAPES[0])))
    got = bootstrap_counts(v, "elo", 4, 1, unit="graph", ranker_params={"seed": 5})
    assert got.method == "one refit per resample"
    np.testing.assert_array_equal(got.samples, refit_samples(v, 4, 1, "graph", {"seed": 5}))


def test_a_shuffled_elo_board_takes_a_bootstrap():
    """``--ranker elo --param seed=S --bootstrap B`` stopped with a TypeError (Elo's ``seed`` collided with
    the bootstrap's own); the board's intervals now come from the refit of each shuffled resample."""
    v = make_votes(frame_vote_rows(verdicts(SHAPES[1])))
    board = leaderboard_from_votes(v, ranker="elo", ranker_params={"seed": 5}, bootstrap=3, seed=1)
    want = refit_samples(v, 3, 1, "graph", {"seed": 5})
    cols = [list(v.models).index(m) for m in board.bootstrap.models]
    np.testing.assert_array_equal(board.bootstrap.samples, want[:, cols])


def _same_ratings(got, want, compiled: bool) -> None:
    """The compiled loop equals ``elo_ratings`` to the bit (both call the C library's ``pow``); the numpy
    fallback to the last bits of numpy's SIMD ``power``, which may round otherwise (it does with
    AVX-512)."""
    if compiled:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def _kernel_against_sequential(i, j, s, n, reps, **kw):
    """Each resample of ``elo_ratings_resampled`` against ``elo_ratings`` on its repeated outcomes."""
    picked = []
    compiled = elo_module._compiled_steps()
    kernel = elo_module._compiled_steps

    def spy():  # records that the compiled loop was asked for (it is the real one)
        picked.append(True)
        return compiled
    elo_module._compiled_steps = spy
    try:
        got = elo_ratings_resampled(i, j, s, n, lambda v0, v1: reps[:, v0:v1], **kw)
    finally:
        elo_module._compiled_steps = kernel
    assert bool(picked) == kw.get("compiled", i.size >= elo_module.COMPILED_FROM_VOTES)
    for b in range(reps.shape[0]):
        idx = np.repeat(np.arange(i.size), reps[b])
        _same_ratings(got[b], elo_ratings(i[idx], j[idx], s[idx], n, k=kw.get("k", 4.0)), bool(picked))


@pytest.mark.parametrize("compiled", [False, True])
def test_kernel_on_many_models_and_on_one_model_in_every_vote(compiled):
    """Two extremes of how votes share ratings: 300 models and 200 votes (almost no vote meets another's
    models) and a chain where every vote has model 0 (each update reads the one before). Counts as the
    bootstrap draws them (uint8), several repeats of one vote."""
    rng = np.random.default_rng(11)
    reps = rng.poisson(1.0, (5, 200)).astype(np.uint8)
    i = rng.integers(0, 299, 200)
    j = i + 1 + rng.integers(0, 10**6, 200) % (299 - i)
    s = rng.choice([0.0, 0.5, 1.0], 200)
    _kernel_against_sequential(i, j, s, 300, reps, k=32.0, compiled=compiled)
    chain_j = rng.integers(1, 8, 200)
    _kernel_against_sequential(np.zeros(200, dtype=np.int64), chain_j, s, 8, reps, k=32.0,
                               compiled=compiled)


def test_compiled_kernel_across_its_default_chunk():
    """More votes than one chunk of the compiled loop's repeat counts (``COMPILED_CHUNK_VOTES``), picked
    by size (above ``COMPILED_FROM_VOTES``): the ratings carry over the chunk boundary, each chunk's
    votes are read at their own positions."""
    V = max(elo_module.COMPILED_CHUNK_VOTES, elo_module.COMPILED_FROM_VOTES) + 3001
    rng = np.random.default_rng(12)
    i = rng.integers(0, 19, V)
    j = i + 1 + rng.integers(0, 10**6, V) % (19 - i)
    s = rng.choice([0.0, 0.5, 1.0], V)
    _kernel_against_sequential(i, j, s, 20, rng.poisson(1.0, (2, V)).astype(np.int64))


def test_elo_without_a_bootstrap_does_not_import_llvmlite():
    """llvmlite (the compiled bootstrap loop) loads only when Elo's bootstrap runs compiled, and numba never
    for Elo: their imports would add to every command's start-up."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom engine.rankers.objects import ranker_object\n"
            "from engine.rankers.elo import elo_ratings\n"
            "elo_ratings(np.array([0]), np.array([1]), np.array([1.0]), 2)\n"
            "assert 'llvmlite' not in sys.modules, 'llvmlite imported'\n"
            "from engine.rankers.elo import elo_ratings_resampled\n"
            "elo_ratings_resampled(np.array([0]), np.array([1]), np.array([1.0]), 2, "
            "lambda a, b: np.ones((1, b - a), dtype=np.uint8), compiled=True)\n"
            "assert 'llvmlite' in sys.modules\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert out.returncode == 0, out.stderr


def test_without_llvmlite_the_numpy_loop_gives_the_same_ratings():
    """An environment without llvmlite (older than requirements.txt) runs the numpy step loop instead of
    stopping on an ImportError: the same ratings (to the last bit of numpy's ``power``)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\nsys.modules['llvmlite'] = None\n"
            "from engine.rankers.elo import elo_ratings, elo_ratings_resampled\n"
            "i, j, s = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 0.5, 0.0])\n"
            "reps = np.array([[2, 0, 1], [1, 3, 1]], dtype=np.uint8)\n"
            "got = elo_ratings_resampled(i, j, s, 3, lambda a, b: reps[:, a:b], compiled=True)\n"
            "assert 'llvmlite' not in sys.modules or sys.modules['llvmlite'] is None\n"
            "for b in range(2):\n"
            "    idx = np.repeat(np.arange(3), reps[b])\n"
            "    np.testing.assert_allclose(got[b], elo_ratings(i[idx], j[idx], s[idx], 3), rtol=1e-14)\n"
            "assert (got[0] != got[1]).any()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
