"""Steps done once per store (table ``init_log``), such as importing the shipped dataset on first
use: recorded so that a dataset the user deleted is not imported again on the next start."""

from __future__ import annotations

from engine.store.connection import Store


def init_step_done(store: Store, step: str) -> bool:
    """Whether ``step`` was already recorded for this store."""
    return store.cursor().execute("SELECT 1 FROM init_log WHERE step = ?", [step]).fetchone() is not None


def record_init_step(store: Store, step: str, detail: str) -> None:
    """Record ``step`` as done (with what it did); a step recorded already keeps its first record."""
    with store.transaction() as tx:
        tx.execute("INSERT OR IGNORE INTO init_log (step, detail) VALUES (?, ?)", [step, detail])
