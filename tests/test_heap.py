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
