"""Foreground work first: background threads pause at their checkpoints while a foreground run is on.

The app's warming grids (``engine.views.curve_grid.WarmGrid``) make the next slider moves' curves and boards
on a background thread while the reader looks at the page. When the reader moves a slider, the move's rerun
(the script thread) and the warming thread both want the interpreter lock: measured on vicuna80 pooled
(docs/notes/rerun34-34.md), a fragment rerun of ~45 ms of CPU took ~220 ms of wall time beside a warming
thread fitting a keep-K curve (~1 s of CPU). Here a foreground run (``foreground()``: a script or fragment
run) pauses every background thread (``background()``) at its next ``checkpoint()`` (between items, and
between the fits of a curve's K or μ values, a few ms apart), and the background goes on when no
foreground run is left.

No deadlock: a foreground thread that waits for a background thread's result says so (``waiting()``), and
while any foreground thread waits, the background is not paused, whatever other runs go on beside it (another
session's page run, or a run still ending: had they paused it, the waiting run would get its result one
checkpoint per ``MAX_PAUSE``, minutes for a curve; tests/app/test_board_grid_page.py timed out so in CI); a
pause also never lasts longer than ``MAX_PAUSE`` at one checkpoint. Pausing changes when a result is made,
never what it is (the same calls on the same inputs). Outside a ``background()`` block ``checkpoint()``
returns at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_PAUSE = 2.0
"""Seconds one checkpoint waits at most for the foreground runs to end (a long page run, another
session's): the background then makes one more step and looks again."""

_STATE = threading.Condition()
_running = 0  # foreground runs going on (any thread, nested runs counted each)
_waiting = 0  # foreground threads waiting for a background thread's result
_local = threading.local()


@contextmanager
def foreground() -> Iterator[None]:
    """A foreground run (the app's script or fragment run): background threads pause at their checkpoints
    until it ends."""
    global _running
    with _STATE:
        _running += 1
    try:
        yield
    finally:
        with _STATE:
            _running -= 1
            _STATE.notify_all()


@contextmanager
def waiting() -> Iterator[None]:
    """A foreground thread waits here for a background thread's result: the background must not pause."""
    global _waiting
    with _STATE:
        _waiting += 1
        _STATE.notify_all()
    try:
        yield
    finally:
        with _STATE:
            _waiting -= 1


@contextmanager
def background() -> Iterator[None]:
    """Mark the calling thread as background work: its ``checkpoint()`` calls pause for foreground runs."""
    before = getattr(_local, "background", False)
    _local.background = True
    try:
        yield
    finally:
        _local.background = before


def in_background() -> bool:
    """Whether the calling thread is background work (inside ``background()``): such work keeps to one
    thread (``engine.rankers.bt.fit_bt_batch_info``), leaving the other cores to the reader's runs and the
    browser, until ``awaited()``."""
    return bool(getattr(_local, "background", False))


def awaited() -> bool:
    """Whether a foreground thread waits now for a background thread's result (``waiting()``): background
    work may then take more threads (a page's run is blocked on it, not drawing)."""
    with _STATE:
        return _waiting > 0


def paused() -> bool:
    """Whether a background thread would pause now: a foreground run is on and no foreground thread waits
    for the background."""
    with _STATE:
        return _held()


def _held() -> bool:
    """``paused``'s test, under ``_STATE``."""
    return _running > 0 and _waiting == 0


def checkpoint() -> None:
    """In a ``background()`` thread: wait while a foreground run is on (at most ``MAX_PAUSE`` seconds);
    elsewhere return at once."""
    if not getattr(_local, "background", False):
        return
    deadline = time.monotonic() + MAX_PAUSE
    with _STATE:
        while _held():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            _STATE.wait(left)
