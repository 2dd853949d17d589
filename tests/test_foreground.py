"""Background work pauses for foreground runs (``engine.foreground``): a warming thread's checkpoint waits
while a script run is on, goes on when it ends or when the run waits for the background's result (no
deadlock), and a curve warmed through the pauses is the curve made from scratch (vicuna80 gpt-4)."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from engine import foreground as fg


def _background_step(started: threading.Event, passed: threading.Event) -> threading.Thread:
    """A thread that marks itself background and passes one checkpoint."""

    def run() -> None:
        with fg.background():
            started.set()
            fg.checkpoint()
            passed.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_background_checkpoint_waits_for_the_foreground_run_and_goes_on_after_it(monkeypatch):
    monkeypatch.setattr(fg, "MAX_PAUSE", 60.0)
    started, passed = threading.Event(), threading.Event()
    with fg.foreground():
        assert fg.paused()
        thread = _background_step(started, passed)
        assert started.wait(30)
        assert not passed.wait(0.3)  # paused: the run is still on (MAX_PAUSE is 60 s)
        with fg.foreground():  # nested runs count each: the inner one ending does not let it go
            pass
        assert not passed.wait(0.2)
    assert passed.wait(30)  # the run ended: it went on
    thread.join(30)
    assert not fg.paused()


def test_a_foreground_run_waiting_for_the_background_lets_it_go_on(monkeypatch):
    monkeypatch.setattr(fg, "MAX_PAUSE", 60.0)
    started, passed = threading.Event(), threading.Event()
    with fg.foreground():
        thread = _background_step(started, passed)
        assert started.wait(30)
        with fg.waiting():
            assert not fg.paused()
            assert passed.wait(30)
        assert fg.paused()
    thread.join(30)


def test_a_run_waiting_for_the_background_lets_it_go_on_beside_another_run(monkeypatch):
    """Two foreground runs (two sessions, or one still ending), one of them waiting for the background's
    result: the background goes on (it paused until the other run ended, a checkpoint per MAX_PAUSE: the
    waiting run's curve took minutes, tests/app/test_board_grid_page.py timed out in CI)."""
    monkeypatch.setattr(fg, "MAX_PAUSE", 60.0)
    started, passed = threading.Event(), threading.Event()
    with fg.foreground(), fg.foreground():
        thread = _background_step(started, passed)
        assert started.wait(30)
        assert fg.paused()
        with fg.waiting():
            assert not fg.paused()
            assert passed.wait(30)
        assert fg.paused()
    thread.join(30)
    assert not fg.paused()


def test_a_checkpoint_outside_background_work_never_waits_and_a_pause_has_a_limit(monkeypatch):
    monkeypatch.setattr(fg, "MAX_PAUSE", 60.0)
    with fg.foreground():
        plain = threading.Thread(target=fg.checkpoint, daemon=True)  # not background work: no pause
        plain.start()
        plain.join(20)
        assert not plain.is_alive()
        monkeypatch.setattr(fg, "MAX_PAUSE", 0.05)
        started, passed = threading.Event(), threading.Event()
        _background_step(started, passed).join(30)
        assert passed.is_set()  # a run that never ends holds the background MAX_PAUSE at a time, no longer


def test_a_warmed_curve_asked_for_during_a_run_is_the_curve_from_scratch(shipped_store, monkeypatch):
    """The page's case: a move's run (foreground) asks for the curve the warming thread has started
    (paused at its first checkpoint by that run): the run waits for it, the thread goes on, and the
    curve is the one made from scratch. Without ``waiting`` the two would wait for each other."""
    from test_curve_grid import MU_STEPS, RESAMPLES, fresh

    from engine.experiments.curves import DEFAULT_MU_GRID
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS
    from engine.ranking.reference import reference_for
    from engine.views.curve_grid import CurveGrid

    monkeypatch.setattr(fg, "MAX_PAUSE", 60.0)
    stack = build_buckets(shipped_store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge="gpt-4")).dense()
    reference = reference_for("vicuna80", None, shipped_store)[0]
    grid = CurveGrid(stack, reference, curve_mus=DEFAULT_MU_GRID, resamples=RESAMPLES, seed=0)
    mu = MU_STEPS[9]
    got: dict[str, pd.DataFrame] = {}
    grid.warm(40, mu, k_max=stack.T, mus=MU_STEPS, reach=0, mu_reach=0)  # plan: keep-K at μ, μ at 40
    for _ in range(3000):  # until the thread has taken the keep-K curve (~80 fits: it is inside them)
        with grid._lock:
            if ("k", mu) in grid._made:
                break
        threading.Event().wait(0.002)
    else:
        pytest.fail("the warming thread never started its first curve")
    with fg.foreground():  # a move's run: the thread pauses at its next checkpoint, inside the curve
        asker = threading.Thread(target=lambda: got.update(k=grid.keep_k_frame(mu)), daemon=True)
        asker.start()
        asker.join(120)
        assert "k" in got, "the run and the paused warming thread waited for each other"
    grid.join(120)
    pd.testing.assert_frame_equal(got["k"], fresh(stack, reference, "k", mu), check_exact=True)
    pd.testing.assert_frame_equal(grid.mu_frame(40), fresh(stack, reference, "mu", 40), check_exact=True)
