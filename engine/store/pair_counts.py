"""The ``pair_counts`` table (migration 074): a dataset of aggregated outcomes per model pair.

Writes go through here (one transaction with the dataset row, its new version and the import log), as
every dataset write goes through ``engine.store``; ``engine.store.writes`` renames and deletes the rows
with their dataset and a ``replace`` import of verdicts clears them. A dataset holds pair counts or
verdicts, never both: storing counts into a dataset with verdicts (or the reverse, read here) is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import LensError
from engine.frames import pd
from engine.store import writes
from engine.store.sql import scalar

if TYPE_CHECKING:
    from engine.store.connection import Store

STORED_COLUMNS: tuple[str, ...] = ("model_a", "model_b", "wins_a", "wins_b", "ties", "both_bad")


def store_pair_counts(store: Store, dataset: str, pairs: pd.DataFrame, *, replace: bool, description: str,
                      source: str, rows_read: int, detail: str) -> tuple[int, int]:
    """Store ``pairs`` (one row per unordered pair, ``model_a < model_b``) as the dataset's pair counts,
    creating it, or replacing its content when ``replace``; returns (revision, import id)."""
    with store.transaction() as tx:
        exists = writes.dataset_exists(tx, dataset)
        if exists and not replace:
            raise LensError(f"Dataset {dataset!r} already exists; import with --replace to swap its content "
                            "for these pair counts.")
        if exists:
            writes.clear_content(tx, dataset)
            writes.bump_dataset(tx, dataset, description=description, source=source)
        else:
            writes.create_dataset(tx, dataset, description=description, source=source)
        tx.register("_pair_rows", pairs[list(STORED_COLUMNS)])
        try:
            cols = ", ".join(STORED_COLUMNS)
            tx.execute(f"INSERT INTO pair_counts (dataset, {cols}) SELECT ?, {cols} FROM _pair_rows",
                       [dataset])
        finally:
            tx.unregister("_pair_rows")
        import_id = writes.log_import(tx, dataset=dataset, source=source, fmt="pair-counts",
                                      rows_read=rows_read, rows_stored=len(pairs), rows_rejected=0,
                                      rows_invalid=0, mode="all-or-nothing", status="stored", detail=detail)
        return writes.revision(tx, dataset), import_id


def no_prompts(dataset: str, what: str) -> str:
    """The one sentence every per-prompt analysis gives on a pair-count dataset."""
    return (f"Dataset {dataset!r} holds pair counts (outcomes summed per model pair), not prompts: {what} "
            "needs per-prompt graphs; the count rankers and diagnose --table majority work on it.")


def refuse_pair_counts(store: Store, dataset: str, what: str = "this analysis") -> None:
    """Raise the ``no_prompts`` sentence when ``dataset`` holds pair counts: the guard of every read of a
    dataset's verdicts (``Store.verdicts``, ``vote_query.store_relation``), so each per-prompt analysis
    answers alike."""
    if is_pair_count_dataset(store, dataset):
        raise LensError(no_prompts(dataset, what))


def is_pair_count_dataset(store: Store, dataset: str) -> bool:
    """Whether the dataset holds pair counts (then it holds no verdict: else one sentence). Read again only
    when the store file has changed since the last read (``Store.read_unless_changed``: every page run
    asks)."""

    def read() -> bool:
        cur = store.cursor()
        if cur.execute("SELECT 1 FROM pair_counts WHERE dataset = ? LIMIT 1", [dataset]).fetchone() is None:
            return False
        if int(scalar(cur, "SELECT count(*) FROM verdicts WHERE dataset = ?", [dataset])):
            raise LensError(f"Dataset {dataset!r} holds both pair counts and verdicts; import one of them "
                            "again with --replace.")
        return True

    return store.read_unless_changed(f"pair_counts:{dataset}", read)


def pair_count_rows(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's pair counts, one row per unordered pair, ordered by the pair."""
    cols = ", ".join(STORED_COLUMNS)
    return store.cursor().execute(
        f"SELECT {cols} FROM pair_counts WHERE dataset = ? ORDER BY model_a, model_b", [dataset]).df()


def pair_count_datasets(store: Store) -> list[str]:
    """The names of the datasets that hold pair counts."""
    return [r[0] for r in store.cursor().execute(
        "SELECT DISTINCT dataset FROM pair_counts ORDER BY dataset").fetchall()]
