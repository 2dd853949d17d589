"""tests/stall_watch.py: a grid join that stalls behind a counted foreground run leaves a warning with the
foreground counts and the warming thread's stack, seen while it was stalled; a quick join leaves nothing."""

from __future__ import annotations

import re
import warnings

import pytest
from stall_watch import watched_join

import engine.foreground as fg
from engine.views.curve_grid import WarmGrid


class Squares(WarmGrid):
    """The smallest real warming grid: an item's square, made on the grid's warming thread."""

    def _make(self, item):
        return item * item

    def warm(self, items: list[int]) -> None:
        self._start(items)


def test_a_join_stalled_by_a_foreground_run_warns_with_the_counts_and_the_threads_stacks(monkeypatch):
    monkeypatch.setattr(fg, "MAX_PAUSE", 0.6)  # one checkpoint's pause: 0.6 s, not 2 s
    grid = Squares()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fg.foreground():  # a run left counted: the warming thread pauses at each checkpoint
            grid.warm([3])
            note = watched_join(grid, 30, "squares.join", stall_s=0.25)
    assert grid._has(3) and grid._get(3) == 9  # the join waited the pause out: the item is made
    assert note is not None and note.startswith("squares.join took ")
    took = float(note.split(" took ")[1].split(" s")[0])
    assert 0.25 <= took < 30
    stalled, end = note.split("; at the end: ")
    # while stalled: the count that paused it, and the warming thread paused inside its checkpoint
    assert "engine.foreground._running=1 _waiting=0" in stalled
    assert re.search(r"lens-warm-grid: [^;]*\bcheckpoint:\d+", stalled), stalled
    assert end.startswith("engine.foreground._running=1 _waiting=0")  # still inside the run at the end
    [w] = [w for w in caught if issubclass(w.category, pytest.PytestWarning)]
    assert str(w.message) == note and w.filename == __file__  # the warning points at the test's line


def test_a_quick_join_leaves_no_warning():
    grid = Squares()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid.warm([2, 4])
        assert watched_join(grid, 30, stall_s=5.0) is None
    assert grid._has(2) and grid._has(4)
    assert not [w for w in caught if issubclass(w.category, pytest.PytestWarning)]
