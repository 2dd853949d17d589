"""How a judge run stops: the store cannot take its calls (``StoreUnavailable``, with why in words),
the server never answers (``ServerStalled``), and the runner's internal give-up / stop signals."""

from __future__ import annotations

import duckdb

from engine.errors import LensError, is_disk_full
from engine.judging.backends import (
    BackendStopped,
)
from engine.store.connection import Store, StoreBusy, StoreError

STORE_ERRORS = (StoreError, duckdb.Error, OSError)


class ServerStalled(BackendStopped):
    """The first calls of a run all timed out: the server takes connections but does not answer."""


class StoreUnavailable(LensError):
    """The store could not take a run's finished calls; they were kept in a journal."""


def store_problem(store: Store, exc: BaseException) -> str:
    """Why the store could not be written, in a few words (busy, disk full, or the cause)."""
    if isinstance(exc, StoreBusy):
        return f"it stayed in use by another process past the {store.lock_wait_s:g} s lock wait"
    if is_disk_full(exc):
        return f"the disk holding {store.path.parent} is full (or a file-size limit was reached)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"the write failed ({first})"


class GaveUp(Exception):
    """A call failed for good after its retries (the unit gets None for it)."""


class Stopped(Exception):
    """The run is stopping (a fatal backend error or a lost store): nothing new is sent."""
