"""The garbage collector around work that builds many long-lived or acyclic objects: one owner for the CLI
process, the app's prewarm and the verdict readers.

Loading numpy, DuckDB, Streamlit and the engine's modules allocates some hundred thousand objects that live
as long as the process, and the collector walks them again and again while they are made (about 30 ms of a
``leaderboard``'s 0.3 s start-up; ~0.2 s of the app's prewarm imports and, unfrozen, ~0.1 s more of the
first open's store reads at 1M: docs/notes/open38-38.md). Loading makes almost no cyclic garbage, so the
collector is off while it runs and what it built is frozen after (``gc.freeze``: kept out of every later
collection's walk; refcounting still frees those objects). A file's reader builds one small list per row,
none of which can form a cycle: the collector waits until it is done (``collection_paused``).

The collector is the process's: blocks in several threads (the prewarm importing while a script run reads
an upload) share one count, so the collector is off while any block is open and put back as the first one
found it when the last one closes. Each block reading ``gc.isenabled()`` and restoring it on its own could
leave it off for good (one block reads "off" while another has it off, the other closes and enables, the
first closes and leaves it as it "found" it)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_open = 0  # blocks open, in every thread
_was_enabled = False  # the collector as the first of the open blocks found it


@contextmanager
def collection_paused() -> Iterator[None]:
    """No garbage collection while the block (or any other thread's block) runs; the collector put back as
    the first open block found it when the last one closes, on an error too."""
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0 and _was_enabled:
                gc.enable()


@contextmanager
def loading_without_collection() -> Iterator[None]:
    """``collection_paused`` while the block runs (module loading), then the heap frozen."""
    try:
        with collection_paused():
            yield
    finally:
        gc.freeze()
