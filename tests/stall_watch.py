"""Evidence of a stalled wait in a test: the foreground counts and every live thread's stack.

tests/app/test_board_grid_page.py's join of the board grid's warming thread (~0.5 s of CPU) has taken ~70 s in
three CI runs and then an AppTest run timed out (docs/notes/lead-37.md, "Second fresh-clone CI"): the
signature of the warming thread paused at each checkpoint (``engine.foreground.MAX_PAUSE``) while a
foreground run is counted. What raised that count was never seen: it was gone by the test's teardown.
``watched_join`` looks while the join is still stalled: once it has waited ``STALL_S`` it records
``engine.foreground._running`` / ``_waiting`` and every live thread's stack, waits on, and when the join
took longer than ``STALL_S`` emits them as a pytest warning (the run's summary lists it). It never fails a
test: what the test asserts after the join decides that, as before.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
import warnings

import pytest

STALL_S = 10.0
"""A join longer than this is a stall worth its evidence (the warming joins take 0.2-3 s of CPU)."""


def thread_stacks(depth: int = 6) -> str:
    """Every live thread but the main one: its name and its innermost ``depth`` frames, innermost last."""
    frames = sys._current_frames()
    stacks = [f"{t.name}: " + " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(
        traceback.extract_stack(frames[t.ident])[-depth:])) for t in threading.enumerate()
        if t.ident in frames and t is not threading.main_thread()]
    return "; ".join(stacks)


def foreground_counts() -> str:
    """``engine.foreground``'s counts as the background's pause rule reads them (or that it is not loaded)."""
    fg = sys.modules.get("engine.foreground")
    if fg is None:
        return "engine.foreground not loaded"
    return f"engine.foreground._running={fg._running} _waiting={fg._waiting}"


def watched_join(grid, timeout: float, what: str = "grid.join", stall_s: float | None = None) -> str | None:
    """``grid.join(timeout)``; when it takes longer than ``stall_s`` (default ``STALL_S``), a pytest warning
    with the foreground counts and the live threads' stacks seen at ``stall_s`` (while stalled) and at the
    end. Returns that warning's text (None when the join was quick)."""
    stall_s = STALL_S if stall_s is None else stall_s
    start = time.monotonic()
    grid.join(min(stall_s, timeout))
    took = time.monotonic() - start
    if took < stall_s:
        return None
    seen = f"at {took:.1f} s: {foreground_counts()}; threads: {thread_stacks()}"
    grid.join(max(0.0, timeout - took))
    took = time.monotonic() - start
    note = (f"{what} took {took:.1f} s (over {stall_s:g} s); {seen}; at the end: {foreground_counts()}; "
            f"threads: {thread_stacks()}")
    warnings.warn(pytest.PytestWarning(note), stacklevel=2)
    return note
