"""The count bootstrap as background work (``engine.foreground``): the Leaderboard's bootstrap job pauses at
its checkpoints while a page's run is on, and its numbers are those of the one-block path (resamples drawn
and multiplied ``DRAW_ROWS`` at a time, the dense counts built in blocks: each compared with the
whole-chunk construction it replaced, on the shipped vicuna80 votes by prompt, by graph and by single
vote)."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest

from engine import foreground
from engine.rankers.votes import votes
from engine.ranking import count_bootstrap as cb
from engine.ranking.vote_query import store_vote_rows


@pytest.fixture(scope="module")
def v80(shipped_db):
    from engine.store.connection import Store

    with Store(shipped_db) as store:
        return votes(store_vote_rows(store, "vicuna80"))


def one_block_cells(v, unit: str, B: int, seed: int):
    """The chunks as drawn before the blocks: one multinomial of the chunk's rows, one sparse product."""
    mat, mult, cols = cb.compact_patterns(v, unit)
    U = int(mult.sum())
    p = mult / U
    rng = np.random.default_rng(seed)
    step = max(1, min(B, cb.CHUNK_CELLS // max(1, mult.size, cols.size)))
    matT = mat.T.tocsr()
    identity = mat.shape[0] == mat.shape[1] == mat.nnz and bool(
        (mat.indices == np.arange(mat.nnz)).all() and (mat.data == 1).all())
    for s in range(0, B, step):
        draws = rng.multinomial(U, p, size=min(step, B - s)).astype(np.float64)
        yield cols, draws if identity else np.asarray((matT @ draws.T).T)


@pytest.mark.parametrize("unit", ["prompt", "graph", "vote"])
@pytest.mark.parametrize("B", [1, 61, 200])
def test_the_blocks_draw_and_count_what_one_block_did(v80, unit, B):
    got = list(cb.resampled_cells(v80, unit, B, np.random.default_rng(7)))
    want = list(one_block_cells(v80, unit, B, 7))
    for (gc, gx), (wc, wx) in zip(got, want, strict=True):
        assert np.array_equal(gc, wc) and gx.dtype == wx.dtype and np.array_equal(gx, wx)
    n = v80.n
    for (W, T), (cols, counts) in zip(cb.resampled_counts(v80, unit, B, np.random.default_rng(7)), want,
                                      strict=True):
        c = np.zeros((counts.shape[0], 3 * n * n))
        c[:, cols] = counts
        c = c.reshape(counts.shape[0], n, n, 3)
        assert np.array_equal(W, c[..., 2] + c[..., 0].swapaxes(1, 2))
        assert np.array_equal(T, c[..., 1] + c[..., 1].swapaxes(1, 2))


def parked(threads, limit_s: float = 60.0) -> bool:
    """Whether one of ``threads()`` comes to wait in ``engine.foreground.checkpoint`` (looked for until
    ``limit_s``: a bound for a failing test, not a timing)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        for thread in threads():
            frame = sys._current_frames().get(thread.ident)
            while frame is not None:
                if frame.f_code is foreground.checkpoint.__code__:
                    return True
                frame = frame.f_back
        time.sleep(0.002)
    return False


def in_thread(fn) -> tuple[threading.Thread, Future]:
    done: Future = Future()

    def run() -> None:
        try:
            done.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            done.set_exception(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def test_a_background_bootstrap_waits_at_a_checkpoint_while_a_run_is_on(v80, monkeypatch):
    monkeypatch.setattr(foreground, "MAX_PAUSE", 120.0)
    plain = cb.bootstrap_counts(v80, "bt", 40, 3)

    def job():
        with foreground.background():
            return cb.bootstrap_counts(v80, "bt", 40, 3)

    with foreground.foreground():
        thread, done = in_thread(job)
        assert parked(lambda: [thread])  # it pauses for the run
        assert not done.done()
    thread.join(120)
    got = done.result(timeout=0)
    assert np.array_equal(got.samples, plain.samples, equal_nan=True) and got.method == plain.method
    # outside a background block the checkpoints return at once: the command line never waits
    with foreground.foreground():
        thread, done = in_thread(lambda: cb.bootstrap_counts(v80, "bt", 40, 3))
        thread.join(120)
        assert done.done() and np.array_equal(done.result().samples, plain.samples, equal_nan=True)
