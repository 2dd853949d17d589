"""The garbage collector around module loading: one owner for the CLI process and the app's prewarm.

Loading numpy, DuckDB, Streamlit and the engine's modules allocates some hundred thousand objects that live
as long as the process, and the collector walks them again and again while they are made (about 30 ms of a
``leaderboard``'s 0.3 s start-up; ~0.2 s of the app's prewarm imports and, unfrozen, ~0.1 s more of the
first open's store reads at 1M: docs/notes/open38-38.md). Loading makes almost no cyclic garbage, so the
collector is off while it runs and what it built is frozen after (``gc.freeze``: kept out of every later
collection's walk; refcounting still frees those objects)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loading_without_collection() -> Iterator[None]:
    """No garbage collection while the block runs, then the heap frozen and the collector put back as the
    process had it (on, or off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
