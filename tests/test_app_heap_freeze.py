"""``app_pages._lens.freeze_startup_heap``: the app's import-time objects are frozen out of the collector's
walk once per server process, and nothing a later run leaves behind is frozen with them (app.py calls it on
every run: a second freeze would make every cycle alive at that moment uncollectable for good)."""

from __future__ import annotations

import gc
import weakref

import pytest

import app_pages._lens as lens


class Node:
    """A cyclic object, collectable only by the garbage collector (not by reference counting)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def unfrozen(monkeypatch):
    """A process whose heap is not frozen yet (as a fresh server's), thawed again afterwards."""
    gc.unfreeze()
    monkeypatch.setattr(lens, "_HEAP_FROZEN", False)
    yield
    gc.unfreeze()


def test_freeze_once_then_every_later_cycle_is_still_collected(unfrozen):
    before = Node()
    lens.freeze_startup_heap()  # the first run
    assert gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    later = Node()  # made by a later run (a slider move's frames)
    gone = weakref.ref(later)
    lens.freeze_startup_heap()  # every later run calls it again
    # not grown (a second freeze would add ``later`` and all else alive): a frozen object freed meanwhile
    # by another thread of this process (a test's warming thread ending) may make it smaller
    assert gc.get_freeze_count() <= frozen
    del later
    gc.collect()
    assert gone() is None, "a cycle made after the first run was frozen: it can never be freed"
    kept = weakref.ref(before)
    del before
    gc.collect()
    assert kept() is not None  # frozen at the first run: skipped by the collection, as intended


def test_the_freeze_runs_no_full_collection(unfrozen):
    """The first run freezes without walking the heap first (a full collection there cost 0.08 s of the
    Leaderboard's first open on a server to free about ten objects)."""
    full: list[dict] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(info)

    gc.callbacks.append(seen)
    try:
        lens.freeze_startup_heap()
    finally:
        gc.callbacks.remove(seen)
    assert gc.get_freeze_count() > 0
    assert full == [], "freeze_startup_heap ran a full collection"
