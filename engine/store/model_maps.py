"""A dataset's stored model-name map to the reference (table ``model_maps``, migration 072).

The map is part of the dataset: ``engine.store.writes.DATASET_TABLES`` moves it with a rename and
removes it with a delete; a ``replace`` import keeps it (it is about names, not verdicts). Setting or
clearing it is a change of the dataset (a new version, revision + 1), because the reference columns,
curves and protocol tables that the app and the results cache key on (dataset, version) are computed
through it; the style counts of the answer texts, which the map cannot change, are carried over to
the new version so style control does not count the texts again.
"""

from __future__ import annotations

import pandas as pd

from engine.errors import LensError
from engine.store import writes
from engine.store.connection import Store
from engine.store.sql import scalar

MAP_FRAME_COLUMNS = ("model", "reference_model")


def stored_map(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's stored map (columns model, reference_model; '' = not on the reference), by model;
    empty when it has none."""
    return store.cursor().execute(
        "SELECT model, reference_model FROM model_maps WHERE dataset = ? ORDER BY model", [dataset]
    ).df().astype({"model": str, "reference_model": str})


def set_stored_map(store: Store, dataset: str, mapping: pd.DataFrame) -> int:
    """Replace the dataset's stored map by ``mapping`` (columns model, reference_model; an empty frame
    clears it) in one transaction; returns the dataset's new version. Refuses an unknown dataset, an
    empty or repeated model name, in one sentence."""
    rows = mapping.loc[:, list(MAP_FRAME_COLUMNS)].fillna("").astype(str)
    rows = rows.assign(model=rows["model"].str.strip(), reference_model=rows["reference_model"].str.strip())
    if (rows["model"] == "").any():
        line = int((rows["model"] == "").to_numpy().nonzero()[0][0]) + 1
        raise LensError(f"Row {line} of the model map has no model name.")
    dup = rows["model"][rows["model"].duplicated()]
    if not dup.empty:
        raise LensError(f"The model map lists the model {dup.iloc[0]!r} twice.")
    with store.transaction() as tx:
        if not writes.dataset_exists(tx, dataset):
            raise LensError(f"There is no dataset named {dataset!r} in the store.")
        old = int(scalar(tx, "SELECT version FROM datasets WHERE name = ?", [dataset]))
        tx.execute("DELETE FROM model_maps WHERE dataset = ?", [dataset])
        if len(rows):
            tx.register("_map", rows.reset_index(drop=True))
            try:
                tx.execute("INSERT INTO model_maps (dataset, model, reference_model) "
                           "SELECT ?, model, reference_model FROM _map", [dataset])
            finally:
                tx.unregister("_map")
        version = writes.bump_dataset(tx, dataset)
        for table in ("answer_style", "answer_style_runs"):  # the texts did not change: nor did their counts
            tx.execute(f"UPDATE {table} SET version = ? WHERE dataset = ? AND version = ?",
                       [version, dataset, old])
    return version
