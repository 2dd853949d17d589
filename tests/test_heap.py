"""engine.heap: the collector is off inside the block, the heap is frozen after, and the collector is put
back as the process had it (the CLI process and the app's prewarm both load their modules this way)."""

from __future__ import annotations

import gc

import pytest

from engine.heap import loading_without_collection


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_without_collection_freezes_and_puts_the_collector_back(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        before = gc.get_freeze_count()
        kept = [[i] for i in range(1000)]  # tracked containers made before the block: frozen by it too
        with loading_without_collection():
            inside = gc.isenabled()
            made = [[i, inside] for i in range(1000)]  # lists: gc-tracked (a dict of atoms is not)
        assert inside is False
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() >= before + len(kept) + len(made)
        with pytest.raises(RuntimeError), loading_without_collection():  # put back on an error too
            raise RuntimeError("boom")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_overlapping_blocks_in_two_threads_keep_the_collector_off_until_the_last_closes() -> None:
    """Two threads' blocks overlap (the prewarm importing while a script run reads an upload): the first to
    close must not turn the collector on under the other, and the last to close puts it back as the first
    found it (each block restoring its own reading once left it off for good, or on under a block)."""
    import threading

    from engine.heap import collection_paused

    was = gc.isenabled()
    gc.enable()
    try:
        inner_open, outer_closed, inner_done = threading.Event(), threading.Event(), threading.Event()
        seen: list[bool] = []

        def inner() -> None:
            with collection_paused():
                inner_open.set()
                outer_closed.wait(10)
                seen.append(gc.isenabled())  # the other block has closed; this one is still open
            inner_done.set()

        with collection_paused():
            worker = threading.Thread(target=inner)
            worker.start()
            assert inner_open.wait(10)
        outer_closed.set()
        worker.join(10)
        assert inner_done.is_set()
        assert seen == [False]
        assert gc.isenabled() is True
        with collection_paused(), loading_without_collection():  # nested in one thread
            assert gc.isenabled() is False
        assert gc.isenabled() is True
    finally:
        (gc.enable if was else gc.disable)()
